/**
 * The Lua scripts of the Redis limiter: the algorithm of `Window` (exact
 * sliding log for requests, token buckets, concurrency slots with leases, all
 * or nothing) run atomically inside Redis, one call per acquire and one per
 * release, over every subject of the call.
 *
 * Keys per subject (three per subject, in this order):
 *
 * - the request log, a sorted set (member = call id, score = admission time in
 *   ms), for subjects with a request limit: at most `rpm` members, read only at
 *   its ends (`ZCARD`, `ZRANGE` by rank);
 * - the token buckets, a hash (field = bucket start in ms, value = tokens), for
 *   subjects with a token limit: at most 61 live fields, dead ones deleted on
 *   every touch;
 * - the concurrency slots, a sorted set (member = call id, score = lease expiry
 *   in ms), for subjects with a concurrency limit: at most `concurrency`
 *   members plus expired leases pruned on every touch.
 *
 * So every script does work bounded by the limits and the bucket count, never
 * by the traffic. Every write refreshes the key's TTL (window or lease plus one
 * second; the buckets' window plus a bucket), so idle subjects vanish on their
 * own.
 *
 * @since 0.1.0
 */
import { RateWindow } from "@modelgate/core"
import { createHash } from "node:crypto"

const { concurrencyRetryMs } = RateWindow

/** A script and its SHA1, for EVALSHA with a fallback to EVAL. @category models */
export interface Script {
  readonly source: string
  readonly sha: string
}

const script = (source: string): Script => ({ source, sha: createHash("sha1").update(source).digest("hex") })

const now = `
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = tonumber(ARGV[2])
`

/**
 * Acquire. ARGV: now (-1: Redis TIME), windowMs, leaseMs, call id, estimate,
 * bucketMs, then rpm, tpm, concurrency per subject (-1: none). Reply: admitted
 * (1/0), the start of the token bucket the call is counted in, then the 8
 * integers of a `Window.Observation` per subject.
 *
 * @category scripts
 */
export const acquire: Script = script(`${now}
local lease = tonumber(ARGV[3])
local id = ARGV[4]
local estimate = tonumber(ARGV[5])
local size = tonumber(ARGV[6])
local bucket = now - (now % size)
local n = #KEYS / 3
local reply = {0, bucket}
local refused = false
for i = 1, n do
  local logKey, tokKey, slotKey = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local rpm, tpm, conc = tonumber(ARGV[4 + 3 * i]), tonumber(ARGV[5 + 3 * i]), tonumber(ARGV[6 + 3 * i])
  local requests, tokens, inflight = 0, 0, 0
  local rReset, tReset, rWait, tWait, cWait = -1, -1, -1, -1, -1
  if rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', logKey, '-inf', now - window)
    requests = redis.call('ZCARD', logKey)
    if requests > 0 then
      local oldest = redis.call('ZRANGE', logKey, 0, 0, 'WITHSCORES')
      rReset = tonumber(oldest[2]) + window - now
    end
    if requests + 1 > rpm then
      local nth = redis.call('ZRANGE', logKey, requests - rpm, requests - rpm, 'WITHSCORES')
      rWait = tonumber(nth[2]) + window - now
    end
  end
  if tpm > 0 then
    local fields = redis.call('HGETALL', tokKey)
    local starts, amounts, dead = {}, {}, {}
    for j = 1, #fields, 2 do
      local start = tonumber(fields[j])
      if start + window <= now then
        dead[#dead + 1] = fields[j]
      else
        starts[#starts + 1] = start
        amounts[start] = tonumber(fields[j + 1])
      end
    end
    if #dead > 0 then redis.call('HDEL', tokKey, unpack(dead)) end
    table.sort(starts)
    for j = 1, #starts do tokens = tokens + amounts[starts[j]] end
    for j = 1, #starts do
      if amounts[starts[j]] > 0 then
        tReset = starts[j] + window - now
        break
      end
    end
    if estimate > tpm then
      tWait = -2
    elseif tokens + estimate > tpm then
      local needed = tokens + estimate - tpm
      local freed = 0
      for j = 1, #starts do
        freed = freed + amounts[starts[j]]
        if freed >= needed then
          tWait = starts[j] + window - now
          break
        end
      end
    end
  end
  if conc > 0 then
    redis.call('ZREMRANGEBYSCORE', slotKey, '-inf', now)
    inflight = redis.call('ZCARD', slotKey)
    if inflight + 1 > conc then cWait = ${concurrencyRetryMs} end
  end
  if rWait ~= -1 or tWait ~= -1 or cWait ~= -1 then refused = true end
  local b = 2 + 8 * (i - 1)
  reply[b + 1] = requests
  reply[b + 2] = tokens
  reply[b + 3] = inflight
  reply[b + 4] = rReset
  reply[b + 5] = tReset
  reply[b + 6] = rWait
  reply[b + 7] = tWait
  reply[b + 8] = cWait
end
if refused then return reply end
reply[1] = 1
for i = 1, n do
  local logKey, tokKey, slotKey = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local rpm, tpm, conc = tonumber(ARGV[4 + 3 * i]), tonumber(ARGV[5 + 3 * i]), tonumber(ARGV[6 + 3 * i])
  local b = 2 + 8 * (i - 1)
  if rpm > 0 then
    redis.call('ZADD', logKey, now, id)
    redis.call('PEXPIRE', logKey, window + 1000)
    reply[b + 1] = reply[b + 1] + 1
    if reply[b + 4] == -1 then reply[b + 4] = window end
  end
  if tpm > 0 then
    redis.call('HINCRBY', tokKey, bucket, estimate)
    redis.call('PEXPIRE', tokKey, window + size + 1000)
    reply[b + 2] = reply[b + 2] + estimate
    if estimate > 0 and reply[b + 5] == -1 then reply[b + 5] = bucket + window - now end
  end
  if conc > 0 then
    redis.call('ZADD', slotKey, now + lease, id)
    redis.call('PEXPIRE', slotKey, lease + 1000)
    reply[b + 3] = reply[b + 3] + 1
  end
end
return reply
`)

/**
 * Release. ARGV: now (-1: Redis TIME), windowMs, call id, bucket start, token
 * change (actual minus estimate; minus the estimate to cancel), cancel (1: also
 * remove the call from the request log, for an admission whose caller never
 * saw the answer). Frees the call's slot; while its bucket is still in the
 * window, adds the change there (never below zero). Freeing the slot and
 * cancelling are idempotent; the token change is not, so the caller sends it
 * at most once (a release whose outcome is unknown is resent with change 0).
 *
 * @category scripts
 */
export const release: Script = script(`${now}
local id = ARGV[3]
local bucket = ARGV[4]
local change = tonumber(ARGV[5])
local cancel = ARGV[6] == '1'
local live = tonumber(bucket) + window > now
for i = 1, #KEYS / 3 do
  local logKey, tokKey, slotKey = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  redis.call('ZREM', slotKey, id)
  if cancel then redis.call('ZREM', logKey, id) end
  if change ~= 0 and live and redis.call('HEXISTS', tokKey, bucket) == 1 then
    if redis.call('HINCRBY', tokKey, bucket, change) < 0 then redis.call('HSET', tokKey, bucket, 0) end
  end
end
return 1
`)
