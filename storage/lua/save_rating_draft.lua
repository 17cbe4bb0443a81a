-- Keep what a rater is typing for one of their episodes (A.slot: A.body, JSON) if A.token_hash
-- is rater A.rater's, the study is open and no save has come since the revision the draft is
-- based on (A.revision): a draft sent before a save and arriving after it is dropped.
-- Returns {1, revision} or {0, refusal, the stored revision}.
local refused = rater_refusal(K.study, A.rater, A.token_hash)
if refused then return {0, refused, 0} end
local revision = tonumber(redis.call('HGET', K.ratings, A.slot) or 0)
if revision ~= tonumber(A.revision) then return {0, RATING_REFUSAL.STALE, revision} end
redis.call('HSET', K.drafts, A.slot, A.body)
return {1, revision}
