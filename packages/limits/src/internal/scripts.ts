/**
 * The Lua scripts of the Redis limiter: the algorithm of `Window` (exact
 * sliding log, concurrency slots with leases, all or nothing) run atomically
 * inside Redis, one call per acquire and one per release, over every subject
 * of the call.
 *
 * Keys per subject (three per subject, in this order): the log (a sorted set:
 * member = call id, score = admission time in ms), the token counts (a hash:
 * call id -> tokens) and the concurrency slots (a sorted set: member = call
 * id, score = lease expiry in ms). Every write refreshes the key's TTL (window
 * or lease plus one second), so idle subjects vanish on their own.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { concurrencyRetryMs } from "../Window.ts"

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
 * then rpm, tpm, concurrency per subject (-1: none). Reply: admitted (1/0)
 * followed by the 8 integers of a `Window.Observation` per subject.
 *
 * @category scripts
 */
export const acquire: Script = script(`${now}
local lease = tonumber(ARGV[3])
local id = ARGV[4]
local estimate = tonumber(ARGV[5])
local n = #KEYS / 3
local reply = {0}
local refused = false
for i = 1, n do
  local logKey, tokKey, slotKey = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local rpm, tpm, conc = tonumber(ARGV[3 + 3 * i]), tonumber(ARGV[4 + 3 * i]), tonumber(ARGV[5 + 3 * i])
  local requests, tokens, inflight = 0, 0, 0
  local rReset, tReset, rWait, tWait, cWait = -1, -1, -1, -1, -1
  if rpm > 0 or tpm > 0 then
    local cutoff = now - window
    local old = redis.call('ZRANGEBYSCORE', logKey, '-inf', cutoff)
    if #old > 0 then
      redis.call('ZREMRANGEBYSCORE', logKey, '-inf', cutoff)
      for j = 1, #old, 500 do
        redis.call('HDEL', tokKey, unpack(old, j, math.min(j + 499, #old)))
      end
    end
    local entries = redis.call('ZRANGE', logKey, 0, -1, 'WITHSCORES')
    requests = #entries / 2
    local members, ats, toks = {}, {}, {}
    for j = 1, requests do
      members[j] = entries[2 * j - 1]
      ats[j] = tonumber(entries[2 * j])
    end
    for j = 1, requests, 500 do
      local values = redis.call('HMGET', tokKey, unpack(members, j, math.min(j + 499, requests)))
      for k = 1, #values do
        local v = tonumber(values[k]) or 0
        toks[j + k - 1] = v
        tokens = tokens + v
      end
    end
    if requests > 0 then rReset = ats[1] + window - now end
    for j = 1, requests do
      if toks[j] > 0 then
        tReset = ats[j] + window - now
        break
      end
    end
    if rpm > 0 and requests + 1 > rpm then rWait = ats[requests - rpm + 1] + window - now end
    if tpm > 0 then
      if estimate > tpm then
        tWait = -2
      elseif tokens + estimate > tpm then
        local needed = tokens + estimate - tpm
        local freed = 0
        for j = 1, requests do
          freed = freed + toks[j]
          if freed >= needed then
            tWait = ats[j] + window - now
            break
          end
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
  local b = 1 + 8 * (i - 1)
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
  local rpm, tpm, conc = tonumber(ARGV[3 + 3 * i]), tonumber(ARGV[4 + 3 * i]), tonumber(ARGV[5 + 3 * i])
  local b = 1 + 8 * (i - 1)
  if rpm > 0 or tpm > 0 then
    redis.call('ZADD', logKey, now, id)
    redis.call('HSET', tokKey, id, estimate)
    redis.call('PEXPIRE', logKey, window + 1000)
    redis.call('PEXPIRE', tokKey, window + 1000)
    reply[b + 1] = reply[b + 1] + 1
    reply[b + 2] = reply[b + 2] + estimate
    if reply[b + 4] == -1 then reply[b + 4] = window end
    if estimate > 0 and reply[b + 5] == -1 then reply[b + 5] = window end
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
 * Release. ARGV: now (-1: Redis TIME), windowMs, call id, actual tokens,
 * cancel (1: remove the call entirely, for an admission whose caller never
 * saw the answer). Frees the call's slot; sets its token count to the actual
 * one while its entry is still in the window. Idempotent.
 *
 * @category scripts
 */
export const release: Script = script(`${now}
local id = ARGV[3]
local actual = tonumber(ARGV[4])
local cancel = ARGV[5] == '1'
for i = 1, #KEYS / 3 do
  local logKey, tokKey, slotKey = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  redis.call('ZREM', slotKey, id)
  if cancel then
    redis.call('ZREM', logKey, id)
    redis.call('HDEL', tokKey, id)
  else
    local at = redis.call('ZSCORE', logKey, id)
    if at and tonumber(at) > now - window then redis.call('HSET', tokKey, id, actual) end
  end
end
return 1
`)
