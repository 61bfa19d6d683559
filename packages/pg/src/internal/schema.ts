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
  },
  {
    version: 2,
    name: "listings kept for every node, and a new incarnation for rows changed behind the library",
    statements: [
      // What a listing made of a session at `version` (incarnation:head): a cache that every node
      // shares, taken only for that exact version.
      `CREATE TABLE session_tree_listings (
        session_id text NOT NULL,
        version text NOT NULL,
        listing text NOT NULL,
        CONSTRAINT session_tree_listings_pkey PRIMARY KEY (session_id),
        CONSTRAINT session_tree_listings_session_fkey FOREIGN KEY (session_id)
          REFERENCES session_tree_sessions (id) ON DELETE CASCADE
      )`,
      // The library only ever inserts entry rows up to the head it raises in the same statement; it
      // never updates or deletes an entry row, lowers a head, or changes a header, an ID or an
      // incarnation. Each of those draws the session a new incarnation: an entry row inserted past
      // its session's head, any entry row updated or deleted, the entries truncated (every session),
      // and an update of a session row that changes its header, ID or incarnation or lowers its head.
      // Its version is then one it never had, so every listing made before reads it again, and a
      // writer that loaded it before is told it was replaced. (A head raised by hand draws none: the
      // version is new all the same, and the rows it counts are missing.) The functions keep the
      // search_path they were made with, so they find these tables whoever changes the rows.
      `CREATE FUNCTION session_tree_renew(ids text[]) RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
        UPDATE session_tree_sessions SET incarnation = gen_random_uuid() WHERE id = ANY(ids)
      $$`,
      `CREATE FUNCTION session_tree_entries_inserted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        PERFORM session_tree_renew(array_agg(n.session_id)) FROM (
          SELECT r.session_id FROM new_rows r JOIN session_tree_sessions s ON s.id = r.session_id
           GROUP BY r.session_id, s.head HAVING max(r.seq) > s.head
        ) n;
        RETURN NULL;
      END $$`,
      `CREATE FUNCTION session_tree_entries_updated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        PERFORM session_tree_renew(array_agg(DISTINCT session_id)) FROM (
          SELECT session_id FROM old_rows UNION SELECT session_id FROM new_rows
        ) changed;
        RETURN NULL;
      END $$`,
      `CREATE FUNCTION session_tree_entries_deleted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        PERFORM session_tree_renew(array_agg(DISTINCT session_id)) FROM old_rows;
        RETURN NULL;
      END $$`,
      `CREATE FUNCTION session_tree_entries_truncated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        UPDATE session_tree_sessions SET incarnation = gen_random_uuid();
        RETURN NULL;
      END $$`,
      `CREATE FUNCTION session_tree_header_updated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        IF NEW.header IS DISTINCT FROM OLD.header OR NEW.id IS DISTINCT FROM OLD.id
           OR NEW.incarnation IS DISTINCT FROM OLD.incarnation OR NEW.head < OLD.head THEN
          NEW.incarnation := gen_random_uuid();
        END IF;
        RETURN NEW;
      END $$`,
      `CREATE TRIGGER session_tree_entries_inserted AFTER INSERT ON session_tree_entries
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION session_tree_entries_inserted()`,
      `CREATE TRIGGER session_tree_entries_updated AFTER UPDATE ON session_tree_entries
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION session_tree_entries_updated()`,
      `CREATE TRIGGER session_tree_entries_deleted AFTER DELETE ON session_tree_entries
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION session_tree_entries_deleted()`,
      `CREATE TRIGGER session_tree_entries_truncated AFTER TRUNCATE ON session_tree_entries
        FOR EACH STATEMENT EXECUTE FUNCTION session_tree_entries_truncated()`,
      `CREATE TRIGGER session_tree_header_updated BEFORE UPDATE ON session_tree_sessions
        FOR EACH ROW EXECUTE FUNCTION session_tree_header_updated()`
    ]
  },
  {
    version: 3,
    name: "blobs",
    statements: [
      // The blobs of a session (`docs/format.md`, "Blobs"): named by the SHA-256 of their bytes (64
      // lowercase hexadecimal digits), each stored once per session. They go with their session:
      // the foreign key removes them when it is deleted. A fork copies the rows it needs, so no
      // session ever depends on another's rows.
      `CREATE TABLE session_tree_blobs (
        session_id text NOT NULL,
        hash text NOT NULL,
        size integer NOT NULL,
        bytes bytea NOT NULL,
        CONSTRAINT session_tree_blobs_pkey PRIMARY KEY (session_id, hash),
        CONSTRAINT session_tree_blobs_session_fkey FOREIGN KEY (session_id)
          REFERENCES session_tree_sessions (id) ON DELETE CASCADE,
        CONSTRAINT session_tree_blobs_hash_check CHECK (hash ~ '^[0-9a-f]{64}$'),
        CONSTRAINT session_tree_blobs_size_check CHECK (size >= 0)
      )`,
      // Images and documents are mostly compressed already: stored out of line without a second try
      // at compressing them, and their length is then known without reading them.
      `ALTER TABLE session_tree_blobs ALTER COLUMN bytes SET STORAGE EXTERNAL`,
      // The library only ever inserts blob rows. One updated, deleted or truncated behind its back
      // can make a session unreadable, so it draws the session a new incarnation, as a changed
      // entry row does: listings made before read it again, and a writer that loaded it is told it
      // was replaced. (Rows removed with their session need nothing: the session is gone.)
      `CREATE TRIGGER session_tree_blobs_updated AFTER UPDATE ON session_tree_blobs
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION session_tree_entries_updated()`,
      `CREATE TRIGGER session_tree_blobs_deleted AFTER DELETE ON session_tree_blobs
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION session_tree_entries_deleted()`,
      `CREATE TRIGGER session_tree_blobs_truncated AFTER TRUNCATE ON session_tree_blobs
        FOR EACH STATEMENT EXECUTE FUNCTION session_tree_entries_truncated()`
    ]
  },
  {
    version: 4,
    name: "full-text search of entries, and a notification of every change",
    statements: [
      // The words search keeps of each entry (`docs/serve.md`, "Search"): the lexemes the library
      // made of it (`Search.lineLexemes`), as a tsvector built from them as they are
      // (array_to_tsvector: no parser, no dictionary, no locale), so that the index finds exactly
      // what the library's matcher is then asked to decide. NULL: too many to keep; the entry is
      // then looked at by every search. Made by the first search that needs them, never by a commit.
      `CREATE TABLE session_tree_search (
        session_id text NOT NULL,
        seq integer NOT NULL,
        lexemes tsvector,
        CONSTRAINT session_tree_search_pkey PRIMARY KEY (session_id, seq),
        CONSTRAINT session_tree_search_session_fkey FOREIGN KEY (session_id)
          REFERENCES session_tree_sessions (id) ON DELETE CASCADE
      )`,
      `CREATE INDEX session_tree_search_lexemes ON session_tree_search USING gin (lexemes)`,
      `CREATE INDEX session_tree_search_unkept ON session_tree_search (session_id, seq) WHERE lexemes IS NULL`,
      // How far each session's entries are in the table above: under which incarnation, up to which
      // head. A session whose row says otherwise is brought up to date by the next search (its new
      // entries added; all of it again under a new incarnation).
      `CREATE TABLE session_tree_search_state (
        session_id text NOT NULL,
        incarnation uuid NOT NULL,
        head integer NOT NULL,
        CONSTRAINT session_tree_search_state_pkey PRIMARY KEY (session_id),
        CONSTRAINT session_tree_search_state_session_fkey FOREIGN KEY (session_id)
          REFERENCES session_tree_sessions (id) ON DELETE CASCADE
      )`,
      // Live pages (`serve --db`): every change of a session row (a create, an append, a delete, a
      // new incarnation) sends its ID on the channel `session_tree_changes`, in the transaction
      // that makes the change, so a listener hears of it exactly when the change is committed, from
      // whichever node or program wrote it.
      `CREATE FUNCTION session_tree_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('session_tree_changes', CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END);
        RETURN NULL;
      END $$`,
      `CREATE TRIGGER session_tree_sessions_notify AFTER INSERT OR UPDATE OR DELETE ON session_tree_sessions
        FOR EACH ROW EXECUTE FUNCTION session_tree_notify()`
    ]
  },
  {
    version: 5,
    name: "the facts of each searched entry, so that a query of words is counted from the index",
    statements: [
      // What the library decided of an entry when it indexed it (`Search.entryFacts`): its
      // timestamp, role and model, for an entry that decodes and has searched text; NULL for a line
      // that does not decode (it is handed over as a line, for the library to decode and report).
      // A query of whole words is then counted, filtered and ranked from these, and only the lines
      // of the page are read and checked (`docs/serve.md`, "Search").
      `ALTER TABLE session_tree_search ADD COLUMN ts text, ADD COLUMN role text, ADD COLUMN model text`,
      // Every session is indexed again by the next search, with its facts: the rows made before
      // have none, and a session whose rows have none would be read line by line at every search.
      `DELETE FROM session_tree_search_state`
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
