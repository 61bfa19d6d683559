/**
 * A session of screenshots: N steps of a browsing agent (ask, screenshot call,
 * tool result with a ~500 KB PNG-sized file part, answer), written through the
 * store, which keeps file data over 64 KiB as blobs beside the session; and
 * the same session without the images. Its lines must stay under 1 MB in all,
 * and its load (`SessionStore.read`, which checks that every blob is there
 * with its size) within 1.2 times the load of the session without images. A
 * third row times one bare lstat of each blob: the least that check can cost.
 *
 * A build without blobs stores the images inline: the suite finds that out
 * with one 70 KB file part and measures nothing.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { screenshotBytes, screenshotStep } from "../dataSize.js"
import { rounds, type Row, summarize, tempDir } from "../harness.js"
import * as Ours from "../ours.js"

export interface SizeImagesOptions {
  readonly rounds: number
  readonly warmup: number
  readonly screenshots: number
  readonly imageBytes: number
}

export interface SizeImagesResult {
  readonly rows?: ReadonlyArray<Row>
  /** The bytes of the session's lines with images and without, and of its blobs. */
  readonly lineBytes?: number
  readonly plainBytes?: number
  readonly blobBytes?: number
  readonly blobs?: number
  /** Why nothing was measured. */
  readonly refused?: string
}

const FLOOR = "floor: lstat each blob (node:fs)"

const appendChain = (open: Ours.Open, parent: string | null, bodies: ReadonlyArray<unknown>) =>
  Ours.run(open.store.appendChain(parent, bodies))

/** The size and count of the files under `dir` (none when it is absent). */
const du = (dir: string): { readonly bytes: number; readonly files: number } => {
  if (!NFS.existsSync(dir)) return { bytes: 0, files: 0 }
  let bytes = 0
  let files = 0
  for (const name of NFS.readdirSync(dir, { recursive: true }) as Array<string>) {
    const stat = NFS.statSync(Path.join(dir, name))
    if (stat.isFile()) {
      bytes += stat.size
      files++
    }
  }
  return { bytes, files }
}

/** Whether this build keeps a 70 KB file part out of the session's lines; why not when it does not. */
const blobsInBuild = async (dir: string): Promise<string | undefined> => {
  const path = Path.join(dir, "probe.jsonl")
  const open = await Ours.create(path)
  try {
    await appendChain(open, null, screenshotStep(0, screenshotBytes(70_000)))
  } catch (e) {
    const error = e as { readonly code?: string; readonly message?: string }
    return `blobs not in this build: a 70 KB file part was refused (${error.code ?? ""} ${error.message ?? String(e)})`
  } finally {
    await open.close()
  }
  const size = NFS.statSync(path).size
  return size > 65_536 ? `blobs not in this build: a 70 KB file part is stored inline (the session file holds ${size} bytes)` : undefined
}

export const benchSizeImages = async (options: SizeImagesOptions): Promise<SizeImagesResult> => {
  const tmp = tempDir()
  try {
    const refused = await blobsInBuild(tmp.dir)
    if (refused !== undefined) return { refused }
    const paths = { images: Path.join(tmp.dir, "images.jsonl"), plain: Path.join(tmp.dir, "plain.jsonl") }
    const stores = { images: await Ours.create(paths.images), plain: await Ours.create(paths.plain) }
    try {
      let leaves: { images: string | null; plain: string | null } = { images: null, plain: null }
      for (let i = 0; i < options.screenshots; i++) {
        const image = screenshotBytes(options.imageBytes)
        const a = await appendChain(stores.images, leaves.images, screenshotStep(i, image))
        const b = await appendChain(stores.plain, leaves.plain, screenshotStep(i, undefined))
        leaves = { images: a.at(-1)!.id, plain: b.at(-1)!.id }
      }
    } finally {
      await stores.images.close()
      await stores.plain.close()
    }
    const entries = options.screenshots * 4
    for (const path of Object.values(paths)) {
      if ((await Ours.read(path)).entries.length !== entries) throw new Error(`${path} did not load with ${entries} entries`)
    }
    const lineBytes = NFS.statSync(paths.images).size
    const plainBytes = NFS.statSync(paths.plain).size
    const blobDir = du(`${paths.images}.blobs`)
    const blobNames = NFS.readdirSync(`${paths.images}.blobs`)
    const samples = await rounds([
      { name: "ours: SessionStore.read, no images", run: async () => void (await Ours.read(paths.plain)) },
      { name: "ours: SessionStore.read, with images", run: async () => void (await Ours.read(paths.images)) },
      // What proving each blob present with its size costs at least: one lstat each, nothing else.
      { name: FLOOR, run: async () => void blobNames.forEach((name) => NFS.lstatSync(`${paths.images}.blobs/${name}`)) }
    ], options)
    const rows = summarize(
      `load ${entries} entries, ${options.screenshots} screenshots of ${(options.imageBytes / 1000).toFixed(0)} KB`,
      samples,
      "ours: SessionStore.read, no images",
      {
        "ours: SessionStore.read, no images": `${(plainBytes / 1e3).toFixed(0)} KB of lines`,
        "ours: SessionStore.read, with images": `${(lineBytes / 1e3).toFixed(0)} KB of lines, ${blobDir.files} blob files, ${(blobDir.bytes / 1e6).toFixed(0)} MB`,
        [FLOOR]: `${blobNames.length} lstatSync calls, part of the load with images`
      }
    )
    return { rows, lineBytes, plainBytes, blobBytes: blobDir.bytes, blobs: blobDir.files }
  } finally {
    tmp.remove()
  }
}
