import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { useLoad } from "../components/hooks.ts"
import { ErrorNote, Fields, Loading, Pager, Section } from "../components/ui.tsx"
import { credits, dateTime } from "../format.ts"
import { href } from "../router.ts"

const amount = (text: FormDataEntryValue | null) => (String(text ?? "").trim() === "" ? undefined : Number(text))

/** The key kinds an operator can issue (the form's select offers exactly these). */
const keyKind = (value: FormDataEntryValue | null) => (value === "model" ? "model" : "resource")

/**
 * One account for the operator: balances and ledger totals, credits (a
 * negative amount takes credits away), keys (a new key's plaintext is shown
 * once, here), and the ledger page by page.
 */
export const AccountDetail = ({ id }: { id: string }) => {
  const detail = useLoad(() => api.account(id), [id])
  const [after, setAfter] = useState<string>()
  const ledger = useLoad(
    () => api.accountLedger(id, { limit: "20", after }),
    [id, after]
  )
  const [error, setError] = useState<string>()
  const [issued, setIssued] = useState<string>()

  const act = async (run: () => Promise<unknown>) => {
    try {
      await run()
      setError(undefined)
      await detail.reload()
      setAfter(undefined)
      await ledger.reload()
    } catch (e) {
      setError((e as Error).message)
    }
  }
  const addCredits = (event: Event) => {
    event.preventDefault()
    const form = event.target as HTMLFormElement
    const data = new FormData(form)
    void act(async () => {
      await api.addCredits(id, {
        wallet: amount(data.get("wallet")),
        subscription: amount(data.get("subscription"))
      })
      form.reset()
    })
  }
  const createKey = (event: Event) => {
    event.preventDefault()
    const data = new FormData(event.target as HTMLFormElement)
    const group = String(data.get("group") ?? "").trim()
    void act(async () => {
      const key = await api.createKey(id, {
        kind: keyKind(data.get("kind")),
        ...(group ? { group } : {})
      })
      setIssued(key.key)
    })
  }

  const d = detail.data
  return (
    <main id="main">
      <p>
        <a href={href("accounts")}>← Accounts</a>
      </p>
      <h1>{d ? d.name : "Account"}</h1>
      <ErrorNote message={error ?? detail.error} />
      {d === undefined ? <Loading /> : (
        <div class="grid">
          <Section title="Balances" id="sec-balances">
            <Fields
              rows={[
                ["Id", <span class="mono">{d.id}</span>],
                ["Group", d.group],
                ["Wallet", d.wallet_credits],
                ["Subscription", d.subscription_credits],
                ["Credited", d.ledger.credited],
                ["Charged", d.ledger.charged],
                ["Refunded", d.ledger.refunded],
                ["Ledger lines", d.ledger.entries]
              ]}
            />
            <form class="form-grid" onSubmit={addCredits}>
              <div class="filter">
                <label for="cr-wallet">Wallet credits (±)</label>
                <input id="cr-wallet" name="wallet" type="number" step="any" inputMode="decimal" />
              </div>
              <div class="filter">
                <label for="cr-sub">Subscription credits (±)</label>
                <input id="cr-sub" name="subscription" type="number" step="any" inputMode="decimal" />
              </div>
              <div class="filter-actions">
                <button type="submit" class="primary">Add credits</button>
              </div>
            </form>
          </Section>
          <Section title="Keys" id="sec-keys">
            {issued && (
              <div class="note" role="status">
                <p>New key, shown only now; copy it:</p>
                <output class="mono key" aria-label="New key">{issued}</output>
              </div>
            )}
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Group</th>
                  <th scope="col">Created</th>
                  <th scope="col">State</th>
                </tr>
              </thead>
              <tbody>
                {d.keys.map((k) => (
                  <tr key={k.id}>
                    <td data-label="Key">
                      <span class="mono">{k.hint}</span>
                      <div class="mono small">{k.id}</div>
                    </td>
                    <td data-label="Kind">{k.kind}</td>
                    <td data-label="Group">{k.group ?? "account's"}</td>
                    <td data-label="Created">{dateTime(k.created_at)}</td>
                    <td data-label="State">
                      {k.disabled ?
                        "disabled" :
                        (
                          <button
                            type="button"
                            class="danger"
                            aria-label={`Disable key ${k.hint}`}
                            onClick={() => void act(() => api.disableKey(k.id))}
                          >
                            Disable
                          </button>
                        )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <form class="form-grid" onSubmit={createKey}>
              <div class="filter">
                <label for="key-kind">Kind</label>
                <select id="key-kind" name="kind">
                  <option value="resource">resource (ak_)</option>
                  <option value="model">model (sk-)</option>
                </select>
              </div>
              <div class="filter">
                <label for="key-group">Group (optional)</label>
                <input id="key-group" name="group" />
              </div>
              <div class="filter-actions">
                <button type="submit" class="primary">Create key</button>
              </div>
            </form>
          </Section>
        </div>
      )}
      <Section title="Ledger" id="sec-account-ledger">
        {ledger.data === undefined ?
          <Loading /> :
          ledger.data.data.length === 0 ?
          <p class="muted">No ledger lines.</p> :
          (
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Wallet</th>
                  <th scope="col">Subscription</th>
                  <th scope="col">Task or note</th>
                </tr>
              </thead>
              <tbody>
                {ledger.data.data.map((l) => (
                  <tr key={l.id}>
                    <td data-label="When">{dateTime(l.created_at)}</td>
                    <td data-label="Kind">{l.kind === "charge" ? "pre-charge" : l.kind}</td>
                    <td data-label="Wallet">{credits(l.wallet_credits)}</td>
                    <td data-label="Subscription">{credits(l.subscription_credits)}</td>
                    <td data-label="Task or note" class="wrap">
                      {l.task_id ? <span class="mono">{l.task_id}</span> : l.note ?? "—"}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        {ledger.data && (
          <Pager
            hasMore={ledger.data.has_more}
            lastId={ledger.data.last_id}
            atStart={after === undefined}
            onOlder={setAfter}
            onNewest={() => setAfter(undefined)}
          />
        )}
      </Section>
    </main>
  )
}
