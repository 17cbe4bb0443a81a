-- Restore one exported model call (A.entry) at its own entry id (A.id) in the ledger of a
-- stored episode (K.episode). MORE_KEYS[i] is a body it refers to, named by the hash
-- MORE_ARGS[2i-1], with its text MORE_ARGS[2i] ('' when the export gave it in an earlier line:
-- then it must be stored already). An answered request (A.request) is indexed for the cache.
-- Returns {outcome, detail}.
if redis.call('EXISTS', K.episode) == 0 then return {IMPORT_OUTCOME.MISSING, ''} end
for i, key in ipairs(MORE_KEYS) do
  if MORE_ARGS[2 * i] == '' and redis.call('EXISTS', key) == 0 then
    return {IMPORT_OUTCOME.INCOMPLETE, MORE_ARGS[2 * i - 1]}
  end
end
-- XADD refuses an id not after the ledger's last (its error is a table with `err`; the id it
-- returns is a string, which has no such field): skipped when that very call is there already,
-- refused when it is not (an export lists each ledger in order, so the lines were reordered).
local added = redis.pcall('XADD', K.calls, A.id, A.field, A.entry)
if added.err then
  if #redis.call('XRANGE', K.calls, A.id, A.id) == 1 then return {IMPORT_OUTCOME.SKIPPED, ''} end
  return {IMPORT_OUTCOME.UNORDERED, ''}
end
for i, key in ipairs(MORE_KEYS) do
  local hash = MORE_ARGS[2 * i - 1]
  if redis.call('SADD', K.bodies, hash) == 1 then
    redis.call('HINCRBY', K.refs, hash, 1)
    if MORE_ARGS[2 * i] ~= '' then redis.call('SET', key, MORE_ARGS[2 * i]) end
  end
end
if A.request ~= '' then redis.call('HSET', K.answers, A.request, cjson.encode({A.episode, A.id})) end
redis.call('ZADD', K.ledgers, A.now, A.episode)
return {IMPORT_OUTCOME.CREATED, ''}
