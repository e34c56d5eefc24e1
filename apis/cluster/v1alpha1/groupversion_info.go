// Package v1alpha1 contains the cluster.router.io/v1alpha1 API: the cluster-scoped singletons the
// platform team owns (ClusterIdentity and DNSConfiguration).
// +kubebuilder:object:generate=true
// +groupName=cluster.router.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "cluster.router.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ClusterIdentity{}, &ClusterIdentityList{}, &DNSConfiguration{}, &DNSConfigurationList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
