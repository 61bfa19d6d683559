#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx compiles them on load), so no build step is needed.
//
// The dependencies are plain JavaScript. Loading the big ones before the TypeScript hook is
// installed keeps the hook out of their hundreds of modules, which roughly halves start-up;
// anything not listed here still loads correctly, through the hook.
await Promise.all([
  import("effect/Effect"),
  import("@effect/cli/Command"),
  import("@effect/platform-node/NodeContext"),
  import("@effect/platform-node/NodeRuntime")
])
const { register } = await import("tsx/esm/api")
register()
await import("../src/main.ts")
