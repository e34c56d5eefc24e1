package controllers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

func TestWrittenVersions_OnlyTheCopyOurWriteReplacedIsStale(t *testing.T) {
	at := func(rv string) *routingv1alpha1.ServiceRoute {
		return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{UID: "u", ResourceVersion: rv}}
	}
	v := newWrittenVersions()
	assert.False(t, v.superseded(at("1")), "nothing written yet")
	v.wrote("u", "1") // our write turned version 1 into 2
	assert.True(t, v.superseded(at("1")), "the cache still has the copy our write replaced")
	assert.True(t, v.superseded(at("1")), "still, until the cache moves on")
	assert.False(t, v.superseded(at("2")), "the cache caught up")
	assert.False(t, v.superseded(at("1")), "forgotten once the cache moved on")

	v.wrote("u", "5")
	assert.False(t, v.superseded(&routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{UID: "other", ResourceVersion: "5"}}), "another object")

	var none *writtenVersions
	none.wrote("u", "1")
	assert.False(t, none.superseded(at("1")), "no memory: never stale")
}
