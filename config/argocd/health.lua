-- Argo CD health check for the Service Router Operator's kinds: cluster.router.io ClusterIdentity
-- and DNSConfiguration, routing.router.io Gateway, DNSPolicy and ServiceRoute. The same script
-- serves all five (kustomization.yaml puts it into argocd-cm for each); docs/OPERATOR-GUIDE.md#argo-cd
-- explains the mapping. It uses only Lua's base library: Argo CD opens base, table and package for
-- argocd-cm health checks (and a safe part of os), not string.
--
--   Progressing  the operator has not yet reconciled the current spec (status.observedGeneration
--                or the Ready condition's observedGeneration is behind metadata.generation), Ready
--                is missing, or Ready is not True and Stalled is not: the operator waits for
--                something expected to appear or retries an error (condition Reconciling).
--   Healthy      Ready=True; and a ServiceRoute that is not published on purpose because its
--                namespace's DNSPolicy applies to other clusters (reason DNSPolicyInactive).
--   Degraded     Stalled=True: nothing changes until someone changes a spec (the operator decides
--                which reasons stall: internal/decide/progress.go).
local hs = {}

local function describe(condition)
  local text = condition.reason or "Ready"
  if condition.message ~= nil and condition.message ~= "" then
    text = text .. ": " .. condition.message
  end
  return text
end

local generation = obj.metadata.generation or 0
local status = obj.status
if status == nil or status.observedGeneration == nil or status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to reconcile generation " .. tostring(generation)
  return hs
end

local ready = nil
local stalled = nil
if status.conditions ~= nil then
  for _, condition in ipairs(status.conditions) do
    if condition.type == "Ready" then
      ready = condition
    elseif condition.type == "Stalled" and condition.status == "True" then
      stalled = condition
    end
  end
end
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition"
  return hs
end
if ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to reconcile generation " .. tostring(generation)
  return hs
end

if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready)
  return hs
end
if ready.status == "False" and ready.reason == "DNSPolicyInactive" then
  hs.status = "Healthy"
  hs.message = "Not published from this cluster on purpose: " .. describe(ready)
  return hs
end
if stalled ~= nil and (stalled.observedGeneration == nil or stalled.observedGeneration >= generation) then
  hs.status = "Degraded"
  hs.message = describe(stalled)
  return hs
end
hs.status = "Progressing"
hs.message = describe(ready)
return hs
