/**
 * The schema, one migration at a time. Every table is named `session_tree_…` and lives in the
 * first schema of the connection's `search_path`. Each record's canonical line is `text`, stored
 * exactly as the core wrote it (never `jsonb`, which reorders keys, drops duplicates and refuses
 * `\u0000`).
 */

export interface Migration {
  readonly version: number
  readonly name: string
  readonly statements: ReadonlyArray<string>
}

export const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "sessions and their entries",
    statements: [
      // One row per session. `head` counts its entries (rows 1..head of the entries table), and an
      // append moves it by compare-and-set; `incarnation` is drawn at create, so a session removed
      // and created again under the same ID is never mistaken for the one a writer read. `header`
      // is NULL only when something other than this library wrote the row: it loads as a missing header.
      `CREATE TABLE session_tree_sessions (
        id text NOT NULL,
        header text,
        head integer NOT NULL,
        incarnation uuid NOT NULL,
        changed_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT session_tree_sessions_pkey PRIMARY KEY (id),
        CONSTRAINT session_tree_sessions_head_check CHECK (head >= 0)
      )`,
      // One row per entry, numbered 1..head in commit order; the header is line 1, entry `seq` line seq + 1.
      `CREATE TABLE session_tree_entries (
        session_id text NOT NULL,
        seq integer NOT NULL,
        entry_id text NOT NULL,
        line text NOT NULL,
        CONSTRAINT session_tree_entries_pkey PRIMARY KEY (session_id, seq),
        CONSTRAINT session_tree_entries_entry_id_key UNIQUE (session_id, entry_id),
        CONSTRAINT session_tree_entries_session_fkey FOREIGN KEY (session_id)
          REFERENCES session_tree_sessions (id) ON DELETE CASCADE,
        CONSTRAINT session_tree_entries_seq_check CHECK (seq >= 1)
      )`
    ]
  }
]

/** The version table. Created by `migrate` itself, under the same lock as the migrations. */
export const VERSION_TABLE = `CREATE TABLE IF NOT EXISTS session_tree_migrations (
  version integer NOT NULL,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT session_tree_migrations_pkey PRIMARY KEY (version)
)`

/**
 * The key of the transaction-scoped advisory lock that serializes migrations of one database
 * (the ASCII bytes of "session_" as a big-endian bigint). Every process that migrates takes it first.
 */
export const MIGRATION_LOCK = "8315179226536832607"
