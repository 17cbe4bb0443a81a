-- Add every name of MORE_ARGS to the set of indexed dimension names, or none when the new ones
-- would take it past A.cap. Returns {1 added or 0 refused, names in the set before, new names}.
local known = redis.call('SMISMEMBER', K.names, unpack(MORE_ARGS))
local new = {}
for i, name in ipairs(MORE_ARGS) do
  if known[i] == 0 then new[#new + 1] = name end
end
local size = redis.call('SCARD', K.names)
if #new == 0 then return {1, size, 0} end
if size + #new > tonumber(A.cap) then return {0, size, #new} end
redis.call('SADD', K.names, unpack(new))
return {1, size, #new}
