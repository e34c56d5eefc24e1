-- Argo CD health check for the Service Router Operator's kinds: cluster.router.io ClusterIdentity
-- and DNSConfiguration, routing.router.io Gateway, DNSPolicy and ServiceRoute. The same script
-- serves all five (kustomization.yaml puts it into argocd-cm for each); docs/OPERATOR-GUIDE.md#argo-cd
-- explains the mapping. It uses only Lua's base library: Argo CD opens base, table and package for
-- argocd-cm health checks (and a safe part of os), not string.
--
--   Progressing  the operator has not yet reconciled the current spec (status.observedGeneration
--                or the Ready condition's observedGeneration is behind metadata.generation), or
--                Ready is missing or Unknown (a reconcile error the operator retries), or the
--                object waits for something that is expected to appear (Pending phase).
--   Healthy      Ready=True; and a ServiceRoute that is not published on purpose because its
--                namespace's DNSPolicy applies to other clusters (reason DNSPolicyInactive).
--   Degraded     Ready=False and someone has to change something: phase Failed, or a reason in
--                needsAction (conflicts, invalid names, missing controllers).
local hs = {}

-- Ready=False reasons that persist until a person acts, whatever the phase says.
local needsAction = {
  HostnameConflict = true,
  OwnershipConflict = true,
  DuplicatePolicy = true,
  InvalidHostname = true,
  CredentialNameMissing = true,
  TargetHostnameTooLong = true,
  GatewayNotFound = true,
  NoActiveControllers = true,
  RegionWithoutController = true,
  AdoptedRegionWithoutController = true,
}

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
if status.conditions ~= nil then
  for _, condition in ipairs(status.conditions) do
    if condition.type == "Ready" then
      ready = condition
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
if ready.status == "False" then
  if ready.reason == "DNSPolicyInactive" then
    hs.status = "Healthy"
    hs.message = "Not published from this cluster on purpose: " .. describe(ready)
    return hs
  end
  if status.phase == "Failed" or needsAction[ready.reason] then
    hs.status = "Degraded"
    hs.message = describe(ready)
    return hs
  end
end
hs.status = "Progressing"
hs.message = describe(ready)
return hs
