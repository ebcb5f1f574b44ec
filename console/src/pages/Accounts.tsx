import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { useLoad } from "../components/hooks.ts"
import { ErrorNote, Loading, Pager, Section } from "../components/ui.tsx"
import { dateTime } from "../format.ts"
import { href } from "../router.ts"

const numberOrUndefined = (text: string) => (text.trim() === "" ? undefined : Number(text))

/** A new account: name, optional group and opening balances. */
const CreateAccount = ({ onCreated }: { onCreated: () => void }) => {
  const [error, setError] = useState<string>()
  const [created, setCreated] = useState<string>()
  const submit = async (event: Event) => {
    event.preventDefault()
    const form = event.target as HTMLFormElement
    const data = new FormData(form)
    const group = String(data.get("group") ?? "").trim()
    try {
      const account = await api.createAccount({
        name: String(data.get("name") ?? "").trim(),
        ...(group ? { group } : {}),
        wallet_credits: numberOrUndefined(String(data.get("wallet") ?? "")),
        subscription_credits: numberOrUndefined(String(data.get("subscription") ?? ""))
      })
      setError(undefined)
      setCreated(`Created ${account.name} (${account.id}).`)
      form.reset()
      onCreated()
    } catch (e) {
      setError((e as Error).message)
    }
  }
  return (
    <form class="form-grid" onSubmit={submit}>
      <div class="filter">
        <label for="acc-name">Name</label>
        <input id="acc-name" name="name" required maxLength={200} />
      </div>
      <div class="filter">
        <label for="acc-group">Group (optional)</label>
        <input id="acc-group" name="group" />
      </div>
      <div class="filter">
        <label for="acc-wallet">Wallet credits</label>
        <input id="acc-wallet" name="wallet" type="number" min="0" step="any" inputMode="decimal" />
      </div>
      <div class="filter">
        <label for="acc-sub">Subscription credits</label>
        <input id="acc-sub" name="subscription" type="number" min="0" step="any" inputMode="decimal" />
      </div>
      <div class="filter-actions">
        <button type="submit" class="primary">Create account</button>
      </div>
      <ErrorNote message={error} />
      {created && <p class="note" role="status">{created}</p>}
    </form>
  )
}

/** The operator's list of accounts with balances; "Work as" switches the console to that account. */
export const Accounts = (
  { currentAccount, onSwitch }: { currentAccount: string | undefined; onSwitch: (id: string) => void }
) => {
  const [after, setAfter] = useState<string>()
  const list = useLoad(
    () => api.accounts({ limit: "50", after }),
    [after]
  )
  return (
    <main id="main">
      <h1>Accounts</h1>
      <Section title="New account" id="sec-new-account">
        <CreateAccount onCreated={() => void list.reload()} />
      </Section>
      <Section title="All accounts" id="sec-accounts">
        <ErrorNote message={list.error} />
        {list.data === undefined ? <Loading /> : (
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Account</th>
                <th scope="col">Group</th>
                <th scope="col">Wallet</th>
                <th scope="col">Subscription</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((a) => (
                <tr key={a.id}>
                  <td data-label="Account">
                    <a href={href(`accounts/${a.id}`)}>{a.name}</a>
                    <div class="mono small">{a.id}</div>
                  </td>
                  <td data-label="Group">{a.group}</td>
                  <td data-label="Wallet">{a.wallet_credits}</td>
                  <td data-label="Subscription">{a.subscription_credits}</td>
                  <td data-label="Created">{dateTime(a.created_at)}</td>
                  <td data-label="Actions" class="actions">
                    <button
                      type="button"
                      disabled={currentAccount === a.id}
                      onClick={() => onSwitch(a.id)}
                      aria-label={`Work as ${a.name}`}
                    >
                      {currentAccount === a.id ? "Current" : "Work as"}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {list.data && (
          <Pager
            hasMore={list.data.has_more}
            lastId={list.data.last_id}
            atStart={after === undefined}
            onOlder={setAfter}
            onNewest={() => setAfter(undefined)}
          />
        )}
      </Section>
    </main>
  )
}
