import Database from 'better-sqlite3';

/**
 * Every connection and prepared statement this thread made, kept reachable until the thread (or the
 * process) ends. better-sqlite3 12 wraps them in Node's own node::ObjectWrap, whose destructor
 * (Node 24.19 on, nodejs/node#65446) removes a cleanup hook from the current Environment and aborts
 * the process ("Assertion failed: (env) != nullptr", from Statement::~Statement) when there is none:
 * a garbage collection that V8 runs from a task of its own, during operation or as a thread or
 * process ends, has none. An object never collected is deleted instead by the Environment's own
 * cleanup at the end, where there is one. Nothing here is ever let go: a closed connection's objects
 * cost a few hundred bytes; a statement of an open connection keeps its SQLite statement, so a
 * thread that prepares ever new statements must end in time (ReadStatements.crowded).
 */
const held: object[] = [];

/** A better-sqlite3 connection whose statements (its `pragma`'s too) are all held. */
export function openBetterSqlite(path: string, options?: Database.Options): Database.Database {
  const db = new Database(path, options);
  held.push(db);
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    const statement = prepare(source);
    held.push(statement);
    return statement;
  }) as Database.Database['prepare'];
  // better-sqlite3's own pragma() prepares a statement that is let go at once.
  db.pragma = (source: string, options: Database.PragmaOptions = {}) => {
    const statement = db.prepare(`PRAGMA ${source}`);
    if (!statement.reader) {
      statement.run();
      return options.simple === true ? undefined : [];
    }
    return options.simple === true ? statement.pluck().get() : statement.all();
  };
  return db;
}
