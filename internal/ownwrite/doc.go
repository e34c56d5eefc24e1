// Package ownwrite sends an operator's writes of the objects it generates and of status, and
// remembers them.
//
// Writer asks the API server to answer each write with the object's metadata only: what was sent
// is what the writer keeps, and the object's own watch event brings the new version to the cache.
// Versions remembers, per object, the resourceVersion a write replaced and the one it produced, so
// that a reconcile which read the cache before its previous write arrived does not write again
// (and meet an optimistic-lock conflict), and so that the watch can drop the echo of the
// operator's own write (EchoFilter). Nothing here knows the operator's kinds: both work on any
// client.Object.
package ownwrite
