export * as Migrations from "./Migrations.js"
export * as PgCatalog from "./PgCatalog.js"
export * as PgJournal from "./PgJournal.js"
