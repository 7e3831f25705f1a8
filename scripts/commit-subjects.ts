/**
 * `node scripts/commit-subjects.ts`: every commit subject since the rule began
 * is at most 72 characters (the why and the figures go in the body). Run by
 * `pnpm lint`, so CI checks it. The commits before `SINCE` are history and
 * are left as they are; a checkout without that commit (a shallow clone)
 * says so and checks nothing.
 */
import { spawnSync } from "node:child_process"

/** The last commit before the rule was checked: subjects after it are held to it. */
const SINCE = "a95a4b7"
const LIMIT = 72

const git = (...args: Array<string>) => spawnSync("git", args, { encoding: "utf8" })

if (git("cat-file", "-e", `${SINCE}^{commit}`).status !== 0) {
  console.log(`commit-subjects: ${SINCE} is not in this checkout (a shallow clone?): nothing checked`)
  process.exit(0)
}
const log = git("log", "--format=%h %s", `${SINCE}..HEAD`)
if (log.status !== 0) {
  console.error(`commit-subjects: git log failed: ${log.stderr}`)
  process.exit(2)
}
const long = log.stdout.split("\n").filter((line) => {
  const subject = line.slice(line.indexOf(" ") + 1)
  return subject.length > LIMIT
})
if (long.length > 0) {
  console.error(`commit-subjects: ${long.length} subject(s) over ${LIMIT} characters:`)
  for (const line of long) console.error(`  ${line} (${line.length - line.indexOf(" ") - 1})`)
  process.exit(1)
}
