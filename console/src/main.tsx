import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { api, onSignedOut, type SessionState, setCsrfToken, type SignedIn } from "./api.ts"
import { ErrorNote, Loading } from "./components/ui.tsx"
import { AccountDetail } from "./pages/AccountDetail.tsx"
import { Accounts } from "./pages/Accounts.tsx"
import { Channels } from "./pages/Channels.tsx"
import { Money } from "./pages/Money.tsx"
import { Overview } from "./pages/Overview.tsx"
import { Resources } from "./pages/Resources.tsx"
import { SignIn } from "./pages/SignIn.tsx"
import { TaskDetail } from "./pages/TaskDetail.tsx"
import { TaskLog } from "./pages/TaskLog.tsx"
import { Webhook } from "./pages/Webhook.tsx"
import { href, navigate, type Route, useRoute } from "./router.ts"
import "./styles.css"

const NAV = [
  ["tasks", "Task log"],
  ["resources", "Resources"],
  ["webhook", "Webhook"]
] as const

const OPERATOR_NAV = [
  ["accounts", "Accounts"],
  ["channels", "Channels"],
  ["overview", "Overview"],
  ["money", "Money"]
] as const

const Header = ({ session, route, onSignOut }: { session: SignedIn; route: Route; onSignOut: () => void }) => {
  const current = route.path[0] ?? "tasks"
  const links = session.role === "operator" ? [...NAV, ...OPERATOR_NAV] : NAV
  return (
    <header class="top">
      <a class="skip" href="#main">Skip to content</a>
      <div class="brand">
        <strong>Gateway console</strong>
        <span class="muted small">
          {session.role === "operator" ? "operator" : "owner"}
          {session.account ? ` · ${session.account.name}` : ""}
        </span>
      </div>
      <nav aria-label="Pages">
        <ul>
          {links.map(([path, label]) => (
            <li key={path}>
              <a href={href(path)} aria-current={current === path ? "page" : undefined}>{label}</a>
            </li>
          ))}
        </ul>
      </nav>
      <button type="button" onClick={onSignOut}>Sign out</button>
    </header>
  )
}

/** The page for the current fragment; an operator without a chosen account is sent to the accounts list. */
const Page = ({ session, route, onSwitch }: { session: SignedIn; route: Route; onSwitch: (id: string) => void }) => {
  const [first, second] = route.path
  const poll = session.poll_interval_s
  if (session.role === "operator" && first === "channels") return <Channels />
  if (session.role === "operator" && first === "overview") return <Overview />
  if (session.role === "operator" && first === "money") return <Money />
  if (session.role === "operator" && first === "accounts") {
    return second
      ? <AccountDetail id={second} />
      : <Accounts currentAccount={session.account?.id} onSwitch={onSwitch} />
  }
  if (!session.account) {
    return session.role === "operator"
      ? <Accounts currentAccount={undefined} onSwitch={onSwitch} />
      : (
        <main id="main">
          <ErrorNote message="This session has no account." />
        </main>
      )
  }
  switch (first) {
    case "resources":
      return <Resources />
    case "webhook":
      return <Webhook />
    case "tasks":
      if (second) return <TaskDetail id={second} pollSeconds={poll} />
  }
  return <TaskLog route={route} pollSeconds={poll} />
}

const SIGNED_OUT: SessionState = { object: "console.session", signed_in: false }

const App = () => {
  const [session, setSession] = useState<SessionState>()
  const [error, setError] = useState<string>()
  const route = useRoute()

  const accept = (s: SessionState) => {
    setCsrfToken(s.signed_in ? s.csrf_token : "")
    setSession(s)
  }
  useEffect(() => {
    api.session().then(accept, (e: Error) => setError(e.message))
    return onSignedOut(() => setSession(SIGNED_OUT))
  }, [])
  useEffect(() => {
    document.title = `${route.path[0] ?? "tasks"} · Gateway console`
  }, [route])

  if (session === undefined) {
    return (
      <main id="main">
        <ErrorNote message={error} />
        {!error && <Loading />}
      </main>
    )
  }
  if (!session.signed_in) return <SignIn onSignedIn={accept} />

  const signOut = async () => {
    await api.signOut().catch(() => undefined)
    setCsrfToken("")
    setSession(SIGNED_OUT)
  }
  const switchAccount = async (id: string) => {
    try {
      accept(await api.switchAccount({ account_id: id }))
      navigate("tasks")
    } catch (e) {
      setError((e as Error).message)
    }
  }
  return (
    <>
      <Header session={session} route={route} onSignOut={signOut} />
      <ErrorNote message={error} />
      <Page session={session} route={route} onSwitch={switchAccount} />
    </>
  )
}

render(<App />, document.getElementById("app")!)
