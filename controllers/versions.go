package controllers

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// writtenVersions remembers, per object the operator wrote, the resourceVersion its write
// replaced. A reconcile that starts from that very version read the cache before the write's
// own event arrived: writing again would only meet an optimistic-lock conflict, so the write is
// skipped, and the write's event — which always comes — runs the reconcile again on the fresh
// copy. Only equality is tested: resourceVersions are opaque and never compared for order.
type writtenVersions struct {
	mu       sync.Mutex
	replaced map[types.UID]string
}

func newWrittenVersions() *writtenVersions {
	return &writtenVersions{replaced: map[types.UID]string{}}
}

// wrote records that a write replaced the version obj had (call it with the object as it was
// read, before the write).
func (v *writtenVersions) wrote(uid types.UID, replacedVersion string) {
	if v == nil || uid == "" {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.replaced[uid] = replacedVersion
}

// superseded reports whether obj, as read from the cache, is a version the operator's own write
// already replaced. Once the cache shows another version the entry is forgotten.
func (v *writtenVersions) superseded(obj client.Object) bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	rv, ok := v.replaced[obj.GetUID()]
	if !ok {
		return false
	}
	if rv == obj.GetResourceVersion() {
		return true
	}
	delete(v.replaced, obj.GetUID())
	return false
}
