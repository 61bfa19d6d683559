/**
 * `npm run pi:install`: installs Pi (`@mariozechner/pi-coding-agent`, pinned) into `.reference/`
 * for the tests that call it and the benchmark that compares with it (`PiReference.ts`).
 */
import { installedVersion, installPi, PI_PACKAGE } from "./PiReference.js"

const dir = installPi()
console.log(`${PI_PACKAGE} ${installedVersion()} in ${dir}`)
