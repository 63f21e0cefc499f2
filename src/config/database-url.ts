export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgresql'; url: string };

/**
 * `postgres://` (or `postgresql://`) for PostgreSQL; `file:PATH`, a plain path or `:memory:` for
 * SQLite. Returns why the URL is not usable (said of DATABASE_URL), never showing a password.
 */
export function parseDatabaseUrl(url: string): DatabaseConfig | string {
  if (url === ':memory:' || url === 'file::memory:') return { kind: 'sqlite', path: ':memory:' };
  if (/^postgres(ql)?:\/\//i.test(url)) {
    if (!URL.canParse(url)) {
      return `is not a usable PostgreSQL URL: ${JSON.stringify(hideCredentials(url))}; expected postgres://USER:PASSWORD@HOST:PORT/DATABASE`;
    }
    return { kind: 'postgresql', url };
  }
  if (url.startsWith('file://')) {
    const parsed = URL.canParse(url) ? new URL(url) : undefined;
    if (parsed === undefined || (parsed.host !== '' && parsed.host !== 'localhost')) {
      return 'is a file:// URL with a host; it takes an absolute path (file:///var/lib/users.db), and for a relative path use file:PATH';
    }
    return { kind: 'sqlite', path: decodeURIComponent(parsed.pathname) };
  }
  if (url.startsWith('file:')) return { kind: 'sqlite', path: url.slice('file:'.length) || './data/users.db' };
  // Other tools' spelling of an SQLite file: taken as a path, it would make a folder named `sqlite:`.
  if (/^sqlite3?:/i.test(url)) {
    return `names SQLite as other tools do, ${JSON.stringify(url)}; here SQLite is file:PATH, file:///abs/path or a plain path`;
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    return `has an unsupported scheme in ${JSON.stringify(hideCredentials(url))}; use postgres://..., file:PATH, a path, or :memory:`;
  }
  return { kind: 'sqlite', path: url };
}

/** The URL with any user and password hidden, for messages and logs. */
export function hideCredentials(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
