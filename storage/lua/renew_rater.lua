-- Give rater A.rater a new token (its hash A.token_hash, its credential key K.token set to
-- A.entry) in place of the one whose hash is A.old_hash (key K.old), which opens nothing from
-- now on. Returns 1; 0 when the rater's token changed meanwhile (read it again); -1 when the
-- study is gone; -2 when it has no such rater.
local path = item(STUDY.raters, A.rater) .. RATER.token_hash
local raw = redis.call('JSON.GET', K.study, path)
if not raw then return -1 end
local held = cjson.decode(raw)
if #held == 0 then return -2 end
if held[1] ~= A.old_hash then return 0 end
redis.call('JSON.SET', K.study, path, cjson.encode(A.token_hash))
redis.call('DEL', K.old)
redis.call('SET', K.token, A.entry)
return 1
