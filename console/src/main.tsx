import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, setCsrfToken, whenSignedOut } from './api';
import { ErrorNotice } from './components/notice';
import { BatchesPage } from './pages/batches';
import { ChannelsPage } from './pages/channels';
import { KeysPage } from './pages/keys';
import { RolloutsPage } from './pages/rollouts';
import { TaskPage } from './pages/task';
import { TasksPage } from './pages/tasks';
import { UsagePage } from './pages/usage';

interface Session {
  username: string;
  csrf_token: string;
  /** The operator's role: only it sees the channels. */
  is_admin: boolean;
}

const PAGES = [
  { path: 'keys', label: 'Keys' },
  { path: 'rollouts', label: 'Rollouts' },
  { path: 'tasks', label: 'Tasks' },
  { path: 'batches', label: 'Batches' },
  { path: 'usage', label: 'Usage' },
  { path: 'channels', label: 'Channels', admin: true },
];

/** The route is the URL fragment (#/keys, #/tasks/<id>), so the gateway serves one page for all of them. */
function useRoute(): string[] {
  const parse = () => location.hash.replace(/^#\/?/, '').split('?')[0].split('/').map(decodeURIComponent);
  const [route, setRoute] = useState(parse);
  useEffect(() => {
    const on = () => setRoute(parse());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

function SignIn(props: { onSignedIn: (s: Session) => void }) {
  const [mode, setMode] = useState<'password' | 'token'>('password');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      const body = mode === 'password' ? { username, password } : { token };
      props.onSignedIn(await api<Session>('POST', '/console/session', { body }));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <main class="signin">
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">AI Gateway console</h1>
        <div role="radiogroup" aria-label="sign in with" class="tabs">
          <label class="inline"><input type="radio" name="mode" checked={mode === 'password'} onChange={() => setMode('password')} /> With password</label>
          <label class="inline"><input type="radio" name="mode" checked={mode === 'token'} onChange={() => setMode('token')} /> With system token</label>
        </div>
        {mode === 'password' ? (
          <>
            <label>Username <input name="username" autoComplete="username" required value={username} onInput={(e) => setUsername(e.currentTarget.value)} /></label>
            <label>Password <input name="password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} /></label>
          </>
        ) : (
          <label>System token <input name="token" type="password" required value={token} onInput={(e) => setToken(e.currentTarget.value)} /></label>
        )}
        <ErrorNotice error={error} />
        <button type="submit" class="primary">Sign in</button>
      </form>
    </main>
  );
}

function Shell(props: { session: Session; onSignOut: () => void }) {
  const route = useRoute();
  const [first, second] = route;
  const pages = PAGES.filter((p) => !p.admin || props.session.is_admin);
  const current = pages.some((p) => p.path === first) ? first : 'keys';
  let page;
  if (current === 'tasks' && second) page = <TaskPage id={second} />;
  else if (current === 'tasks') page = <TasksPage />;
  else if (current === 'rollouts') page = <RolloutsPage />;
  else if (current === 'batches') page = <BatchesPage />;
  else if (current === 'usage') page = <UsagePage />;
  else if (current === 'channels') page = <ChannelsPage />;
  else page = <KeysPage />;
  return (
    <>
      <header class="top">
        <a class="brand" href="#/keys">AI Gateway</a>
        <nav aria-label="main">
          {pages.map((p) => (
            <a key={p.path} href={`#/${p.path}`} aria-current={p.path === current ? 'page' : undefined}>{p.label}</a>
          ))}
        </nav>
        <span class="user">{props.session.username}</span>
        <button type="button" onClick={props.onSignOut}>Sign out</button>
      </header>
      <main>{page}</main>
    </>
  );
}

function App() {
  const [session, setSession] = useState<Session | null | 'loading'>('loading');
  const signedIn = (s: Session) => {
    setCsrfToken(s.csrf_token);
    setSession(s);
  };
  useEffect(() => {
    whenSignedOut(() => setSession(null));
    api<Session | null>('GET', '/console/session').then((s) => (s ? signedIn(s) : setSession(null)), (e: unknown) => {
      if (!(e instanceof ApiError)) console.warn(e);
      setSession(null);
    });
  }, []);
  const signOut = () => {
    api('DELETE', '/console/session').finally(() => setSession(null));
  };
  if (session === 'loading') return <p class="loading">Loading…</p>;
  if (!session) return <SignIn onSignedIn={signedIn} />;
  return <Shell session={session} onSignOut={signOut} />;
}

render(<App />, document.getElementById('app')!);
