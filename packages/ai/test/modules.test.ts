/**
 * Each public module loads on its own, as an application importing only
 * `@session-tree/ai/Agent` loads it: the agent's module first, before the
 * codec's, which its internals use.
 */
import * as Agent from "../src/Agent.js"
import * as Codec from "../src/Codec.js"
import { expect, it } from "vitest"

it("the Agent module loads first and alone, then the Codec module", () => {
  expect(typeof Agent.make).toBe("function")
  expect(Agent.SUMMARY_INSTRUCTION.length).toBeGreaterThan(0)
  expect(typeof Codec.toPrompt).toBe("function")
  expect(new Codec.BlobMissingError({ blob: "sha256:00", size: 1, reason: "r" }).code).toBe("SESSION_BLOB_MISSING")
  expect(Codec.NAMESPACE).toBe("session-tree")
})
