import { useState } from "preact/hooks"
import { api, type Asset, assetUrl } from "../api.ts"
import { useLoad } from "../components/hooks.ts"
import { ErrorNote, Loading, Pager, Section } from "../components/ui.tsx"
import { bytes, dateTime, shape } from "../format.ts"
import { href } from "../router.ts"

/** Delete in two steps, without a browser dialog: the first press asks, the second deletes. */
const DeleteButton = ({ asset, onDeleted }: { asset: Asset; onDeleted: () => void }) => {
  const [asking, setAsking] = useState(false)
  const [error, setError] = useState<string>()
  if (!asking) {
    return (
      <button
        type="button"
        class="danger"
        onClick={() => setAsking(true)}
        aria-label={`Delete ${asset.filename}`}
      >
        Delete
      </button>
    )
  }
  return (
    <span class="confirm">
      <button
        type="button"
        class="danger"
        onClick={async () => {
          try {
            await api.deleteAsset(asset.id)
            onDeleted()
          } catch (e) {
            setError((e as Error).message)
          }
        }}
      >
        Confirm delete
      </button>
      <button type="button" onClick={() => setAsking(false)}>Cancel</button>
      <ErrorNote message={error} />
    </span>
  )
}

/** Result files and confirmed uploads: type, size, duration or dimensions, expiry, download, delete. */
export const Resources = () => {
  const [after, setAfter] = useState<string>()
  const [notice, setNotice] = useState<string>()
  const assets = useLoad(
    () => api.assets({ limit: "20", after }),
    [after]
  )
  const uploads = useLoad(() => api.uploads(), [])
  return (
    <main id="main">
      <h1>Resources</h1>
      <p class="note" role="status">{notice ?? ""}</p>
      <Section title="Result files" id="sec-assets">
        <ErrorNote message={assets.error} />
        {assets.data === undefined ?
          <Loading /> :
          assets.data.data.length === 0 ?
          <p class="muted">No result files.</p> :
          (
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">File</th>
                  <th scope="col">Type</th>
                  <th scope="col">Size</th>
                  <th scope="col">Shape</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {assets.data.data.map((a) => (
                  <tr key={a.id} data-asset-id={a.id}>
                    <td data-label="File">
                      <span class="wrap">{a.filename}</span>
                      <div class="small">
                        task <a href={href(`tasks/${a.task_id}`)} class="mono">{a.task_id}</a>
                      </div>
                    </td>
                    <td data-label="Type">{a.kind} · {a.mime_type}</td>
                    <td data-label="Size">{bytes(a.size_bytes)}</td>
                    <td data-label="Shape">{shape(a)}</td>
                    <td data-label="Expires">{a.expires_at === null ? "never" : dateTime(a.expires_at)}</td>
                    <td data-label="Actions" class="actions">
                      <a class="button" href={assetUrl(a.id, true)} download={a.filename}>Download</a>
                      <DeleteButton
                        asset={a}
                        onDeleted={() => {
                          setNotice(`Deleted ${a.filename}.`)
                          void assets.reload()
                        }}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        {assets.data && (
          <Pager
            hasMore={assets.data.has_more}
            lastId={assets.data.last_id}
            atStart={after === undefined}
            onOlder={setAfter}
            onNewest={() => setAfter(undefined)}
          />
        )}
      </Section>
      <Section title="Confirmed uploads" id="sec-uploads">
        <ErrorNote message={uploads.error} />
        {uploads.data === undefined ?
          <Loading /> :
          uploads.data.data.length === 0 ?
          <p class="muted">No confirmed uploads with a working URL.</p> :
          (
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">File</th>
                  <th scope="col">Type</th>
                  <th scope="col">Size</th>
                  <th scope="col">Shape</th>
                  <th scope="col">URL expires</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {uploads.data.data.map((u) => (
                  <tr key={u.id}>
                    <td data-label="File">
                      <span class="wrap">{u.filename}</span>
                      <div class="mono small">{u.id}</div>
                    </td>
                    <td data-label="Type">{u.kind} · {u.mime_type}</td>
                    <td data-label="Size">{bytes(u.size_bytes)}</td>
                    <td data-label="Shape">{shape(u)}</td>
                    <td data-label="URL expires">{dateTime(u.expires_at)}</td>
                    <td data-label="Actions" class="actions">
                      <a class="button" href={u.url} download={u.filename}>Download</a>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
      </Section>
    </main>
  )
}
