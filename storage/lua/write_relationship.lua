-- Write a relationship (A.id, A.document) only while both agents are stored and the pair and
-- the id are free, in this one step, so that no agent is deleted between the check and the
-- write; bump both agents' counters, which a deletion of either watches.
-- Returns {refusal, detail}: the agent (1 or 2) not stored, the pair's holder, or ''.
local agents = {K.first_agent, K.second_agent}
for n = 1, 2 do
  if redis.call('EXISTS', agents[n]) == 0 then return {RELATIONSHIP_REFUSAL.AGENT, n} end
end
local holder = redis.call('GET', K.pair)
if holder then return {RELATIONSHIP_REFUSAL.PAIR, holder} end
if redis.call('EXISTS', K.relationship) == 1 then return {RELATIONSHIP_REFUSAL.ID, ''} end
redis.call('SET', K.pair, A.id)
redis.call('JSON.SET', K.relationship, '$', A.document)
redis.call('INCR', K.first_made)
redis.call('INCR', K.second_made)
return {RELATIONSHIP_REFUSAL.OK, ''}
