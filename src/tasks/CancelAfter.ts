/**
 * The `Cancel-After` header of a create (docs/api.md, Deadlines): a duration
 * as `45s`, `10m`, `2h` or plain seconds, from 10 s to 48 h. Anything else is
 * refused, never rounded into range: a deadline the caller did not mean is
 * worse than a 400. A header sent twice reaches us joined with a comma, which
 * no form matches, so it is refused too.
 */

export const MIN_CANCEL_AFTER_S = 10
export const MAX_CANCEL_AFTER_S = 48 * 3600

const FORM = /^([0-9]{1,9})(s|m|h)?$/
const UNIT_S = { s: 1, m: 60, h: 3600 } as const

/** The deadline in seconds, or why the header is refused. */
export const parseCancelAfter = (value: string): { readonly seconds: number } | { readonly problem: string } => {
  const match = FORM.exec(value)
  if (match === null) {
    return { problem: `Cancel-After must be one duration such as 45s, 10m, 2h or plain seconds; got "${value}".` }
  }
  const seconds = Number(match[1]) * UNIT_S[(match[2] ?? "s") as keyof typeof UNIT_S]
  if (seconds < MIN_CANCEL_AFTER_S || seconds > MAX_CANCEL_AFTER_S) {
    return { problem: `Cancel-After must be from ${MIN_CANCEL_AFTER_S} seconds to 48 hours; got "${value}".` }
  }
  return { seconds }
}
