-- Store an evaluation (A.entry) at A.path in the episode's evaluations and its status and
-- rewards in its record; A.count_start ('' for not) counts a start. With A.fills ('' for not)
-- its rewards become the episode's own, with A.reasoning and A.prompt, if it still has none
-- (its judge_error set). Returns the starts so far, or -1 if the episode is gone.
if redis.call('EXISTS', K.episode) == 0 then return -1 end
redis.call('JSON.SET', K.episode, A.path, A.entry)
redis.call('INCR', K.scores)  -- keys.SCORES_VERSION
if A.fills ~= '' then
  local unjudged = cjson.decode(redis.call('JSON.GET', K.episode, EPISODE.judge_error))[1]
  if unjudged ~= nil and unjudged ~= cjson.null then
    redis.call('JSON.SET', K.episode, EPISODE.rewards, A.rewards)
    redis.call('JSON.SET', K.episode, EPISODE.reasoning, cjson.encode(A.reasoning))
    redis.call('JSON.SET', K.episode, EPISODE.rewards_prompt, cjson.encode(A.prompt))
    redis.call('JSON.SET', K.episode, EPISODE.judge_error, 'null')
  end
end
if redis.call('EXISTS', K.record) == 0 then return 0 end
redis.call('JSON.SET', K.record, EVALUATION.status, cjson.encode(A.status))
redis.call('JSON.SET', K.record, EVALUATION.rewards, A.rewards)
if A.count_start ~= '' then
  return cjson.decode(redis.call('JSON.NUMINCRBY', K.record, EVALUATION.starts, 1))[1]
end
return 0
