package framework

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// BindOptions configure one BIND 9 `named` serving one primary zone.
type BindOptions struct {
	// Name identifies the server in messages and log names, e.g. "weu".
	Name string
	// Zone is the primary zone, e.g. "example.com" (default).
	Zone string
	// StartTimeout bounds the wait for the first answer (default 30s).
	StartTimeout time.Duration
	// TSIG makes the zone accept dynamic updates only when signed with a TSIG key generated for
	// the server (BindServer.TSIG), as a real RFC 2136 target would, and zone transfers from
	// 127.0.0.1 or signed with the key (docs/INSTALLATION.md#homelab, step 3: ExternalDNS'
	// --rfc2136-axfr signs its transfers, and an ExternalDNS in a pod comes from the pod's
	// address). Default: updates and transfers from 127.0.0.1 without a key.
	TSIG bool
	// Address is another address named listens on (the same port), for clients that cannot reach
	// this machine's loopback: the node world's pods reach it on a node address. Queries from
	// anywhere; updates and transfers from elsewhere than 127.0.0.1 only with the TSIG key.
	Address string
}

// TSIGKey is a TSIG key a server accepts updates signed with.
type TSIGKey struct {
	Name      string // e.g. "externaldns-weu"
	Algorithm string // "hmac-sha256"
	Secret    string // base64
}

// ExternalDNSArgs are the rfc2136 provider's arguments for a zone that takes updates signed with
// k, or only from its own address without a key (k nil): --rfc2136-insecure. The caller adds
// --rfc2136-axfr (transfers are signed with the key when there is one).
func (k *TSIGKey) ExternalDNSArgs() []string {
	if k == nil {
		return []string{"--rfc2136-insecure"}
	}
	return []string{"--rfc2136-tsig-keyname=" + k.Name, "--rfc2136-tsig-secret=" + k.Secret,
		"--rfc2136-tsig-secret-alg=" + k.Algorithm}
}

// BindServer is a running `named` on 127.0.0.1:Port with one primary zone that accepts dynamic
// updates (RFC 2136) and zone transfers from 127.0.0.1, without TSIG: what ExternalDNS's rfc2136
// provider with --rfc2136-insecure and --rfc2136-axfr needs.
type BindServer struct {
	Name string
	Zone string
	Port int
	// TSIG is the key updates must be signed with (BindOptions.TSIG), nil when updates need none.
	TSIG *TSIGKey
	// Dir holds named.conf, the zone file and its journal; removed by Stop.
	Dir string

	// address is BindOptions.Address.
	address string
	proc    *Process
}

// NamedBinary returns the path of named, installed by `make bind-tools`.
func NamedBinary() (string, error) { return lookBinary("named", "/usr/sbin", "/usr/local/sbin") }

// StartBind starts a `named` and returns once it answers the zone's SOA. When c is not nil, Stop
// is registered with it.
func StartBind(ctx context.Context, c Cleanup, opts BindOptions) (*BindServer, error) {
	if opts.Zone == "" {
		opts.Zone = "example.com"
	}
	opts.Zone = strings.TrimSuffix(strings.ToLower(opts.Zone), ".")
	if opts.Name == "" {
		opts.Name = opts.Zone
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	named, err := NamedBinary()
	if err != nil {
		return nil, err
	}
	if _, err := DigBinary(); err != nil {
		return nil, err
	}
	// The port is free when picked but may be taken before named binds it; named then keeps
	// running without listening, so a server that never answers is retried on a new port.
	var errs []error
	for range 3 {
		b, err := startBindOnce(ctx, named, opts)
		if err == nil {
			if c != nil {
				c.Cleanup(func() { _ = b.Stop() })
			}
			return b, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("starting named %q: %w", opts.Name, errors.Join(errs...))
}

func startBindOnce(ctx context.Context, named string, opts BindOptions) (*BindServer, error) {
	port, err := FreeTCPUDPPort()
	if err != nil {
		return nil, err
	}
	dir, err := newWorkDir("named-" + opts.Name)
	if err != nil {
		return nil, err
	}
	b := &BindServer{Name: opts.Name, Zone: opts.Zone, Port: port, Dir: dir, address: opts.Address}
	if opts.TSIG {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		b.TSIG = &TSIGKey{Name: "externaldns-" + sanitize(opts.Name), Algorithm: "hmac-sha256", Secret: base64.StdEncoding.EncodeToString(secret)}
	}
	if err := b.writeConfig(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// -g: foreground, log to stderr, no logging config; -4: IPv4 only; -n 1: one worker thread
	// (several servers share two cores); -c: our configuration. Running as root, named keeps
	// root (no -u); as another user it needs nothing beyond the writable temp directory.
	b.proc, err = StartProcess("named-"+opts.Name, logPathFor(dir, "named-"+opts.Name), named,
		"-g", "-4", "-n", "1", "-c", filepath.Join(dir, "named.conf"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	err = waitFor(wctx, 50*time.Millisecond, b.proc, func(ctx context.Context) (bool, error) {
		log := b.proc.Log()
		if strings.Contains(log, "address in use") {
			return false, fmt.Errorf("port %d already in use", port)
		}
		// "running" follows the interface scan and the zone loads.
		if !strings.Contains(log, "running") {
			return false, nil
		}
		ans, err := Dig(ctx, port, opts.Zone, "SOA")
		return err == nil && ans.Status == "NOERROR" && len(ans.Records) == 1, nil
	})
	if err != nil {
		err = fmt.Errorf("named %q on port %d not answering SOA %s: %w\n--- named log (last 30 lines) ---\n%s",
			opts.Name, port, opts.Zone, err, b.proc.LogTail(30))
		_ = b.Stop()
		return nil, err
	}
	return b, nil
}

func (b *BindServer) writeConfig() error {
	keys, updaters, transfers, listen := "", "127.0.0.1;", "127.0.0.1;", "127.0.0.1;"
	if b.address != "" {
		listen += " " + b.address + ";"
	}
	if b.TSIG != nil {
		keys = fmt.Sprintf("key %q {\n\talgorithm %s;\n\tsecret %q;\n};\n", b.TSIG.Name, b.TSIG.Algorithm, b.TSIG.Secret)
		updaters = fmt.Sprintf("key %q;", b.TSIG.Name)
		transfers += " " + updaters
	}
	conf := fmt.Sprintf(`// Generated by test/e2e/framework for one end-to-end run.
options {
	directory %[1]q;
	pid-file %[2]q;
	session-keyfile %[3]q;
	managed-keys-directory %[1]q;
	listen-on port %[4]d { %[9]s };
	listen-on-v6 { none; };
	// Without SO_REUSEPORT a port collision fails loudly ("address in use") instead of two
	// servers silently sharing the port.
	reuseport no;
	recursion no;
	dnssec-validation no;
	notify no;
	allow-query { any; };
	allow-transfer { 127.0.0.1; };
};

// No rndc control channel.
controls { };
%[7]s
zone %[5]q {
	type primary;
	file %[6]q;
	allow-update { %[8]s };
	allow-transfer { %[10]s };
};
`, b.Dir, filepath.Join(b.Dir, "named.pid"), filepath.Join(b.Dir, "session.key"), b.Port,
		b.Zone, filepath.Join(b.Dir, "db."+b.Zone), keys, updaters, listen, transfers)
	zone := fmt.Sprintf(`$TTL 60
@	IN SOA	ns1.%[1]s. hostmaster.%[1]s. ( 1 60 60 3600 60 )
@	IN NS	ns1.%[1]s.
ns1	IN A	127.0.0.1
`, b.Zone)
	if err := os.WriteFile(filepath.Join(b.Dir, "named.conf"), []byte(conf), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.Dir, "db."+b.Zone), []byte(zone), 0o644)
}

// Query returns a Query for name/qtype against this server.
func (b *BindServer) Query(name, qtype string) Query {
	return Query{Port: b.Port, Name: name, Type: qtype}
}

// Dig queries this server.
func (b *BindServer) Dig(ctx context.Context, name, qtype string) (Answer, error) {
	return Dig(ctx, b.Port, name, qtype)
}

// ZoneRecords transfers the zone and returns its records without the SOA and NS records and the
// ns1 glue the server was seeded with, i.e. what updates added.
func (b *BindServer) ZoneRecords(ctx context.Context) ([]Record, error) {
	ans, err := DigZone(ctx, b.Port, b.Zone)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range ans.Records {
		if r.Type == "SOA" || (r.Type == "NS" && strings.EqualFold(r.Name, b.Zone+".")) ||
			strings.EqualFold(r.Name, "ns1."+b.Zone+".") {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// Diagnostics returns the zone's records and the tail of named's log, for failure messages.
func (b *BindServer) Diagnostics() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var s strings.Builder
	fmt.Fprintf(&s, "--- zone %s on named %q (127.0.0.1#%d) ---\n", b.Zone, b.Name, b.Port)
	recs, err := b.ZoneRecords(ctx)
	if err != nil {
		fmt.Fprintf(&s, "(zone transfer failed: %v)\n", err)
	}
	for _, r := range recs {
		fmt.Fprintln(&s, r)
	}
	fmt.Fprintf(&s, "--- named %q log (last 20 lines without zone transfers; full log %s%s) ---\n%s",
		b.Name, b.proc.LogPath, keptNote(), filteredTail(b.proc.Log(), 20, []string{"AXFR started", "AXFR ended"}))
	return s.String()
}

// Log returns named's whole log; with -g it records every dynamic update ("updating zone ...:
// adding an RR at ...") and zone transfer.
func (b *BindServer) Log() string { return b.proc.Log() }

// NsupdateBinary returns the path of nsupdate (bind9-dnsutils, installed with dig by `make
// bind-tools`).
func NsupdateBinary() (string, error) { return lookBinary("nsupdate", "/usr/bin", "/usr/local/bin") }

// Update sends one dynamic update (RFC 2136) to the zone with nsupdate, as someone fixing a zone
// by hand would; each update is an nsupdate command such as
// `update delete name.example.com. TXT "heritage=external-dns,..."`.
func (b *BindServer) Update(ctx context.Context, updates ...string) error {
	nsupdate, err := NsupdateBinary()
	if err != nil {
		return err
	}
	script := fmt.Sprintf("server 127.0.0.1 %d\nzone %s\n%s\nsend\n", b.Port, b.Zone, strings.Join(updates, "\n"))
	var args []string
	if b.TSIG != nil {
		args = []string{"-y", b.TSIG.Algorithm + ":" + b.TSIG.Name + ":" + b.TSIG.Secret}
	}
	cmd := exec.CommandContext(ctx, nsupdate, args...)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nsupdate against named %q: %w: %s\n--- script ---\n%s", b.Name, err, strings.TrimSpace(string(out)), script)
	}
	return nil
}

// Pause makes named stop answering anyone (SIGSTOP): queries, updates and transfers time out, as
// when the zone's server stalls or the network to it drops. What is sent meanwhile waits in the
// kernel's buffers and is handled when Resume lets named go on, as a delayed network delivers it.
func (b *BindServer) Pause() error { return b.proc.Signal(syscall.SIGSTOP) }

// Resume undoes Pause (SIGCONT).
func (b *BindServer) Resume() error { return b.proc.Signal(syscall.SIGCONT) }

// Running reports whether named is still running.
func (b *BindServer) Running() bool { return b.proc != nil && b.proc.Running() }

// Stop stops named and removes its directory.
func (b *BindServer) Stop() error {
	var err error
	if b.proc != nil {
		err = b.proc.Stop()
	}
	return errors.Join(err, os.RemoveAll(b.Dir))
}
