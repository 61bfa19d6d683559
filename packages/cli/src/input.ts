/**
 * What `append` reads a message from besides its arguments: a file (`--message-file PATH`,
 * `--user-file PATH`) or stdin (`-`), for messages longer than a command line holds. The text
 * is taken as it is, byte for byte (a final newline included); it must be UTF-8. What the store
 * then checks is the same as for `--message` and `--user`.
 */
import { CAPS_V2 } from "@session-tree/core/Codec"
import { isSessionError, type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Files from "@session-tree/file/Files"
import * as Fs from "@session-tree/file/Fs"
import * as Effect from "effect/Effect"

/**
 * The most a message line may hold: the version-2 cap (version 1's is smaller, and the store says so).
 *
 * @since 0.2.0
 * @category constants
 */
export const LINE_BYTES = CAPS_V2.lineBytes

/**
 * The most read for a message of JSON: formatted JSON (indentation, spaces) takes more bytes
 * than the line it becomes, so a file may be larger than a line, up to this.
 *
 * @since 0.2.0
 * @category constants
 */
export const JSON_BYTES = 16 * LINE_BYTES

const count = (n: number): string => n.toLocaleString("en-US")

/** Reads stdin to its end, or to just past `maxBytes`: then the caller knows it is too long without reading the rest. */
const readStdin = (maxBytes: number): Effect.Effect<Uint8Array, SessionError> =>
  Effect.async<Uint8Array, SessionError>((resume) => {
    const stdin = process.stdin
    const chunks: Array<Buffer> = []
    let size = 0
    const done = (result: Effect.Effect<Uint8Array, SessionError>) => {
      stdin.off("data", onData).off("end", onEnd).off("error", onError)
      stdin.pause()
      resume(result)
    }
    const onData = (chunk: Buffer) => {
      chunks.push(chunk)
      size += chunk.length
      if (size > maxBytes) done(Effect.succeed(Buffer.concat(chunks)))
    }
    const onEnd = () => done(Effect.succeed(Buffer.concat(chunks)))
    const onError = (error: Error) => done(Effect.fail(sessionError("SESSION_IO", `cannot read stdin: ${error.message}`, { cause: error })))
    stdin.on("data", onData).on("end", onEnd).on("error", onError)
    return Effect.sync(() => done(Effect.succeed(Buffer.alloc(0))))
  })

/**
 * The text of `--OPTION -` (stdin) or `--OPTION-file PATH`, at most `maxBytes` bytes of UTF-8.
 * Its errors name the option and the file, not the session.
 *
 * @since 0.2.0
 * @category input
 */
export const readText = (
  option: string,
  source: { readonly stdin: true } | { readonly file: string },
  maxBytes: number
): Effect.Effect<string, SessionError> =>
  Effect.gen(function*() {
    const from = "stdin" in source ? `${option} - (stdin)` : `${option}-file ${source.file}`
    const path = "file" in source ? source.file : undefined
    const bytes = "stdin" in source
      ? yield* readStdin(maxBytes)
      : yield* Files.readBytes(source.file, maxBytes).pipe(
        Effect.provide(Fs.layer),
        Effect.catchIf((error) => error.code === "SESSION_FILE_TOO_LARGE", () => Effect.succeed(new Uint8Array(maxBytes + 1))),
        Effect.mapError((error) =>
          isSessionError(error)
            ? sessionError(
              error.code,
              error.code === "SESSION_NOT_REGULAR_FILE"
                ? `${from}: ${error.reason}; to read a pipe, give it on stdin with ${option} -`
                : `${from}: ${error.reason}`,
              { path: error.path ?? path, cause: error.cause }
            )
            : error
        )
      )
    if (bytes.length > maxBytes) {
      return yield* sessionError(
        "SESSION_LINE_TOO_LONG",
        `${from} holds more than ${count(maxBytes)} bytes, more than a message line of a session holds (at most ${count(LINE_BYTES)} bytes)`,
        { path }
      )
    }
    try {
      return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes)
    } catch {
      return yield* sessionError("SESSION_INVALID_UTF8", `${from} is not UTF-8 text`, { path })
    }
  })
