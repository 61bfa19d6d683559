export * as FileJournal from "./FileJournal.js"
export * as Fs from "./Fs.js"
export * as Jsonl from "./Jsonl.js"
export * as Recovery from "./Recovery.js"
