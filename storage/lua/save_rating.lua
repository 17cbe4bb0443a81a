-- Save a rater's rating of one of their episodes (A.slot): the AnnotationForEpisode A.body at
-- K.annotation, if A.token_hash is rater A.rater's, the study is open, and the rating is still
-- at revision A.revision (the saves it was based on), so that a rating saved meanwhile from
-- another tab or device is never overwritten unseen. The first save of an episode counts in the
-- rater's progress; the episode's draft goes; a gold episode's check (A.gold, JSON) is kept.
-- Returns {1, revision, episodes rated} or {0, refusal, the stored revision}.
local refused = rater_refusal(K.study, A.rater, A.token_hash)
if refused then return {0, refused, 0} end
local revision = tonumber(redis.call('HGET', K.ratings, A.slot) or 0)
if revision ~= tonumber(A.revision) then return {0, RATING_REFUSAL.STALE, revision} end
revision = redis.call('HINCRBY', K.ratings, A.slot, 1)
local rated
if revision == 1 then
  rated = redis.call('HINCRBY', K.progress, A.rater, 1)
else
  rated = tonumber(redis.call('HGET', K.progress, A.rater))
end
redis.call('JSON.SET', K.annotation, '$', A.body)
redis.call('HDEL', K.drafts, A.slot)
if A.gold ~= '' then redis.call('HSET', K.gold, A.slot, A.gold) end
return {1, revision, rated}
