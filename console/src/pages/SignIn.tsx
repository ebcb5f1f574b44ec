import { useState } from "preact/hooks"
import { api, type SignedIn } from "../api.ts"
import { ErrorNote } from "../components/ui.tsx"

/**
 * Sign-in with a resource key (ak_…) or the operator's admin token. The key
 * goes to the server once and is forgotten: the session lives in an HttpOnly
 * cookie, never in storage or in the URL.
 */
export const SignIn = ({ onSignedIn }: { onSignedIn: (session: SignedIn) => void }) => {
  const [key, setKey] = useState("")
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      const session = await api.signIn({ key: key.trim() })
      setKey("")
      onSignedIn(session)
    } catch (e) {
      setError((e as Error).message)
    } finally {
      setBusy(false)
    }
  }

  return (
    <main id="main" class="sign-in">
      <h1>Media task gateway console</h1>
      <form class="card" onSubmit={submit}>
        <h2>Sign in</h2>
        <p class="muted">
          Account owners sign in with a resource key (<code>ak_…</code>); the operator with the admin token.
        </p>
        <label for="sign-in-key">Key or admin token</label>
        <input
          id="sign-in-key"
          name="key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
        />
        <ErrorNote message={error} />
        <button type="submit" class="primary" disabled={busy || key.trim() === ""}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  )
}
