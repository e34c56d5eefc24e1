//go:build node

package node

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestNodeWorld_SchedulesPodsOnBothNodes starts the two-node world and runs a Deployment spread
// over both nodes from an image of the world's registry: what every journey of the suite stands
// on. It logs how long each part of the world took to start (docs/DEVELOPMENT.md).
func TestNodeWorld_SchedulesPodsOnBothNodes(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	w, err := framework.StartNodeWorld(ctx, t, t.Logf, framework.NodeWorldOptions{Nodes: 2})
	if err != nil {
		if w != nil {
			t.Logf("logs:\n%s", w.Logs())
		}
		t.Fatal(err)
	}
	labels := map[string]string{"app": "spread"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "spread", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "pause", Image: w.Registry + "/pause:3.10"}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
					}},
				},
			},
		},
	}
	if err := w.Client.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	pods, err := w.WaitDeploymentReady(ctx, "default", "spread", 2*time.Minute)
	if err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, w.Logs())
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != 2 {
		t.Errorf("the Deployment's pods run on %v, want one on each node", nodes)
	}
	t.Logf("world started and a 2-replica Deployment Ready on both nodes %s after the test began", time.Since(start).Round(10*time.Millisecond))
}
