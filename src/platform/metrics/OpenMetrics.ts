import { DataPointType, type MetricData, type ResourceMetrics } from "@opentelemetry/sdk-metrics"

/**
 * The OpenMetrics 1.0.0 text of collected metrics, which Prometheus asks for
 * first when it scrapes. The OpenTelemetry Prometheus exporter writes only
 * the 0.0.4 text format; OpenMetrics differs in what this writes differently:
 * a counter's family is named without `_total` (its sample carries it), `"`
 * is escaped in help texts too, and the exposition ends with `# EOF`.
 */
export const OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

const escapeText = (text: string) => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")

const numberText = (value: number) =>
  Number.isNaN(value) ? "NaN" : value === Infinity ? "+Inf" : value === -Infinity ? "-Inf" : String(value)

const sample = (name: string, labels: Readonly<Record<string, unknown>>, value: number) => {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeText(String(v))}"`)
  return `${name}${pairs.length > 0 ? `{${pairs.join(",")}}` : ""} ${numberText(value)}\n`
}

const family = (metric: MetricData): string => {
  const name = metric.descriptor.name.replace(/_total$/, "")
  const kind = metric.dataPointType === DataPointType.HISTOGRAM
    ? "histogram"
    : metric.dataPointType === DataPointType.SUM && metric.isMonotonic
    ? "counter"
    : "gauge"
  let text = `# TYPE ${name} ${kind}\n# HELP ${name} ${escapeText(metric.descriptor.description)}\n`
  switch (metric.dataPointType) {
    case DataPointType.HISTOGRAM:
      for (const point of metric.dataPoints) {
        const { buckets, count, sum } = point.value
        let cumulative = 0
        buckets.counts.forEach((n, i) => {
          cumulative += n
          const le = i < buckets.boundaries.length ? numberText(buckets.boundaries[i]!) : "+Inf"
          text += sample(`${name}_bucket`, { ...point.attributes, le }, cumulative)
        })
        text += sample(`${name}_count`, point.attributes, count)
        text += sample(`${name}_sum`, point.attributes, sum ?? 0)
      }
      break
    case DataPointType.SUM:
    case DataPointType.GAUGE:
      for (const point of metric.dataPoints) {
        text += sample(kind === "counter" ? `${name}_total` : name, point.attributes, point.value)
      }
      break
    case DataPointType.EXPONENTIAL_HISTOGRAM:
      break // the service makes none
  }
  return text
}

export const toOpenMetrics = (collected: ResourceMetrics): string =>
  collected.scopeMetrics.flatMap((scope) => scope.metrics.map(family)).join("") + "# EOF\n"
