-- Argo CD health check for apps.kruise.io SidecarSet and NamespacedSidecarSet as the SidecarSet
-- API server reports them. It reads the status in the order kstatus (Flux) does, so that both
-- tools agree:
--   status.observedGeneration behind metadata.generation  Progressing  (kstatus: InProgress)
--   condition Stalled True                                Degraded     (kstatus: Failed)
--   spec.injectionStrategy.paused, or the rollout paused  Suspended    (kstatus: Current or InProgress)
--     before it is done (Progressing False, reason Paused)
--   condition Ready True                                  Healthy      (kstatus: Current)
--   condition Ready False                                 Progressing  (kstatus: InProgress)
--   no Ready condition (an OpenKruise-served object, or a server that tracks no pods): the status
--     counters, Healthy once updatedPods and updatedReadyPods reach matchedPods, else Progressing
--     (kstatus, which reads conditions only: Current)
-- Stalled is True while pods the rollout upgraded fail to run the new sidecar (reason PodsFailed);
-- a server that predates it says so with Progressing False, reason PodsFailed, read here alike.
-- It uses only what Argo CD opens for a script of argocd-cm (the base and table libraries): no
-- string, math or os function.

local function condition(conditions, kind)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function message(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return fallback
end

local hs = {}
local spec = obj.spec or {}
local status = obj.status or {}
local generation = obj.metadata.generation or 0
local observed = status.observedGeneration or 0

if observed ~= generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the SidecarSet controller to observe generation " .. generation ..
    " (observed: " .. observed .. "); it does once the injection of that generation is in place"
  return hs
end

local conditions = status.conditions
local stalled = condition(conditions, "Stalled")
local progressing = condition(conditions, "Progressing")
local ready = condition(conditions, "Ready")

if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = message(stalled, "the rollout is stalled")
  return hs
end
if progressing ~= nil and progressing.status == "False" and progressing.reason == "PodsFailed" then
  hs.status = "Degraded"
  hs.message = message(progressing, "pods fail to run the new sidecar")
  return hs
end

if spec.injectionStrategy ~= nil and spec.injectionStrategy.paused == true then
  hs.status = "Suspended"
  hs.message = "Injection is paused (spec.injectionStrategy.paused): new pods get no sidecars"
  return hs
end
if progressing ~= nil and progressing.status == "False" and progressing.reason == "Paused" then
  hs.status = "Suspended"
  hs.message = message(progressing, "the rollout is paused (spec.updateStrategy.paused)")
  return hs
end

if ready == nil then
  -- No Ready condition: an OpenKruise-served SidecarSet (during a migration), which reports only
  -- its pod counters, or a server that tracks no pods. The counters decide: every matched pod
  -- updated and ready is done; otherwise the rollout goes on.
  local matched = status.matchedPods or 0
  local updated = status.updatedPods or 0
  local updatedReady = status.updatedReadyPods or 0
  if updated < matched or updatedReady < matched then
    hs.status = "Progressing"
    hs.message = updated .. " of " .. matched .. " matched pods updated, " .. updatedReady ..
      " updated and ready (status counters; no Ready condition)"
    return hs
  end
  hs.status = "Healthy"
  hs.message = "Generation " .. generation .. " is observed"
  if matched > 0 then
    hs.message = hs.message .. "; " .. matched .. " of " .. matched .. " matched pods updated and ready"
  end
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = message(ready, "every pod the rollout upgrades runs the current spec")
  local missed = condition(conditions, "PodsNotInjected")
  if missed ~= nil and missed.status == "True" then
    hs.message = hs.message .. "; " .. message(missed, "pods run without the sidecars")
  end
  return hs
end
hs.status = "Progressing"
hs.message = message(ready, "the rollout goes on")
return hs
