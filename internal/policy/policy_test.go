package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

var (
	weu = Controller{Name: "external-dns-weu", Region: "weu"}
	neu = Controller{Name: "external-dns-neu", Region: "neu"}
	frc = Controller{Name: "external-dns-frc", Region: "frc"}
)

func spec(mode routingv1alpha1.DNSPolicyMode, sourceRegion, sourceCluster string) routingv1alpha1.DNSPolicySpec {
	return routingv1alpha1.DNSPolicySpec{Mode: mode, SourceRegion: sourceRegion, SourceCluster: sourceCluster}
}

// The cases are the examples of the architecture document's "Mode Behavior" section.
func TestDecide(t *testing.T) {
	weuCluster := Identity{Region: "weu", Cluster: "aks01"}
	neuCluster := Identity{Region: "neu", Cluster: "aks02"}
	weuAdoptsFRC := Identity{Region: "weu", Cluster: "aks01", AdoptsRegions: []string{"frc"}}
	tests := []struct {
		name        string
		spec        routingv1alpha1.DNSPolicySpec
		identity    Identity
		controllers []Controller
		wantActive  bool
		want        []string
		wantReason  string
	}{
		{"Active in WEU uses the WEU controller", spec("Active", "", ""), weuCluster, []Controller{weu, neu}, true, []string{"external-dns-weu"}, "PolicyActive"},
		{"Active in NEU uses the NEU controller", spec("Active", "", ""), neuCluster, []Controller{weu, neu}, true, []string{"external-dns-neu"}, "PolicyActive"},
		{"Active with adopted FRC in DNSConfiguration order", spec("Active", "", ""), weuAdoptsFRC, []Controller{weu, neu, frc}, true, []string{"external-dns-weu", "external-dns-frc"}, "PolicyActive"},
		{"Active in NEU ignores WEU's adoption", spec("Active", "", ""), neuCluster, []Controller{weu, neu, frc}, true, []string{"external-dns-neu"}, "PolicyActive"},
		{"Active with several controllers in the region", spec("Active", "", ""), weuCluster, []Controller{weu, {Name: "external-dns-weu-public", Region: "weu"}, neu}, true, []string{"external-dns-weu", "external-dns-weu-public"}, "PolicyActive"},
		{"Active with matching sourceRegion", spec("Active", "weu", ""), weuCluster, []Controller{weu, neu}, true, []string{"external-dns-weu"}, "PolicyActive"},
		{"Active with other sourceRegion is inactive", spec("Active", "weu", ""), neuCluster, []Controller{weu, neu}, false, nil, "PolicyInactive"},
		{"Active with other sourceCluster is inactive", spec("Active", "", "aks09"), weuCluster, []Controller{weu, neu}, false, nil, "PolicyInactive"},
		{"Active with no controller for the region", spec("Active", "", ""), Identity{Region: "swc", Cluster: "aks03"}, []Controller{weu, neu}, true, nil, "NoActiveControllers"},
		{"RegionBound in the source region uses every controller", spec("RegionBound", "weu", ""), weuCluster, []Controller{weu, frc, neu}, true, []string{"external-dns-weu", "external-dns-frc", "external-dns-neu"}, "PolicyActive"},
		{"RegionBound outside the source region is inactive", spec("RegionBound", "weu", ""), neuCluster, []Controller{weu, frc, neu}, false, nil, "PolicyInactive"},
		{"RegionBound ignores adopted regions", spec("RegionBound", "weu", ""), weuAdoptsFRC, []Controller{weu, neu}, true, []string{"external-dns-weu", "external-dns-neu"}, "PolicyActive"},
		{"RegionBound in the source cluster", spec("RegionBound", "weu", "vec-weu-p-aks01"), Identity{Region: "weu", Cluster: "vec-weu-p-aks01"}, []Controller{weu, neu}, true, []string{"external-dns-weu", "external-dns-neu"}, "PolicyActive"},
		{"RegionBound in another cluster of the source region", spec("RegionBound", "weu", "vec-weu-p-aks01"), Identity{Region: "weu", Cluster: "vec-weu-p-aks02"}, []Controller{weu, neu}, false, nil, "PolicyInactive"},
		{"RegionBound with an empty DNSConfiguration list", spec("RegionBound", "weu", ""), weuCluster, nil, true, nil, "NoActiveControllers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.spec, tt.identity, tt.controllers)
			assert.Equal(t, tt.wantActive, got.Active)
			if tt.want == nil {
				assert.Empty(t, got.Controllers)
			} else {
				assert.Equal(t, tt.want, Names(got.Controllers))
			}
			assert.Equal(t, tt.wantReason, got.Reason)
			assert.NotEmpty(t, got.Message)
		})
	}
}

func TestDecide_DoesNotAliasTheControllerList(t *testing.T) {
	controllers := []Controller{weu, neu}
	got := Decide(spec("RegionBound", "weu", ""), Identity{Region: "weu", Cluster: "aks01"}, controllers)
	got.Controllers[0].Name = "changed"
	assert.Equal(t, "external-dns-weu", controllers[0].Name)
}
