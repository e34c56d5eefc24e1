// Package controllers holds the operator's reconcilers: one per reconciled kind, each gathering
// inputs from the cache, calling the pure packages under internal/ for the desired state, and
// applying the difference.
package controllers
