package testenv

import (
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// WriteAdminKubeconfig writes a kubeconfig for a new system:masters user to path (mode 0600), for
// processes started against this control plane (the operator, ExternalDNS, kubectl). Unlike
// AdminKubeconfig, the caller chooses where the file lives and owns it, so that every process can
// get its own file and no file is rewritten while a process reads it.
func (e *Env) WriteAdminKubeconfig(path, userName string) error {
	if userName == "" {
		userName = "testenv-admin"
	}
	user, err := e.env.AddUser(envtest.User{Name: userName, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding admin user %q: %w", userName, err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, kubeconfig, 0o600)
}
