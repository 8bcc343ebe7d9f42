// tau-kindnetd: a small stand-in for kind's kindnetd, for offline test machines.
//
// kind's own kindnetd (module sigs.k8s.io/kind/images/kindnetd) is not served by the Go module
// proxy these machines reach, so build-node-image.sh builds this program into the image that
// kind's default CNI manifest names.  It does what kind's node networking needs, with the same
// inputs (HOST_IP, POD_IP, POD_SUBNET from the DaemonSet in /kind/manifests/default-cni.yaml):
//
//   - writes /etc/cni/net.d/10-kindnet.conflist (ptp and host-local over this node's PodCIDRs,
//     then portmap), the CNI config the node's containerd waits for;
//   - keeps a route to every other node's PodCIDRs via that node's InternalIP;
//   - masquerades traffic from pods that leaves the pod subnet (nat chain KIND-MASQ-AGENT).
//
// It has no network-policy controller (kind's kindnetd embeds kube-network-policies).
// Standard library only: it talks to the API server with the pod's service-account token and
// runs `ip` and `iptables-restore`/`iptables` from its image.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

const (
	saDir         = "/var/run/secrets/kubernetes.io/serviceaccount"
	cniConfigPath = "/etc/cni/net.d/10-kindnet.conflist"
	masqChain     = "KIND-MASQ-AGENT"
)

type nodeList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			PodCIDR  string   `json:"podCIDR"`
			PodCIDRs []string `json:"podCIDRs"`
		} `json:"spec"`
		Status struct {
			Addresses []struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"addresses"`
		} `json:"status"`
	} `json:"items"`
}

type apiClient struct {
	base  string
	token string
	http  *http.Client
}

func newAPIClient() (*apiClient, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, fmt.Errorf("KUBERNETES_SERVICE_HOST/PORT not set: not running in a pod")
	}
	ca, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s/ca.crt", saDir)
	}
	return &apiClient{
		base: "https://" + net.JoinHostPort(host, port),
		http: &http.Client{Timeout: 30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
	}, nil
}

func (c *apiClient) nodes() (*nodeList, error) {
	tok, err := os.ReadFile(saDir + "/token") // re-read: the projected token rotates
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest(http.MethodGet, c.base+"/api/v1/nodes", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v1/nodes: %s", resp.Status)
	}
	var nl nodeList
	return &nl, json.NewDecoder(resp.Body).Decode(&nl)
}

func eth0MTU() int {
	if i, err := net.InterfaceByName("eth0"); err == nil {
		return i.MTU
	}
	return 0
}

func cniConfig(podCIDRs []string) []byte {
	var ranges, routes []string
	for _, c := range podCIDRs {
		ranges = append(ranges, fmt.Sprintf(`[{"subnet": %q}]`, c))
		dst := "0.0.0.0/0"
		if strings.Contains(c, ":") {
			dst = "::/0"
		}
		routes = append(routes, fmt.Sprintf(`{"dst": %q}`, dst))
	}
	mtu := ""
	if m := eth0MTU(); m > 0 {
		mtu = fmt.Sprintf(",\n      \"mtu\": %d", m)
	}
	return []byte(fmt.Sprintf(`{
  "cniVersion": "0.3.1",
  "name": "kindnet",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "/run/cni-ipam-state",
        "routes": [%s],
        "ranges": [%s]
      }%s
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
`, strings.Join(routes, ", "), strings.Join(ranges, ", "), mtu))
}

// writeIfChanged writes atomically: first under a name CNI ignores, then renamed.
func writeIfChanged(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	tmp := path + ".temp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}

func run(name string, stdin []byte, args ...string) error {
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func syncMasquerade(ipv6 bool, noMasq []string) error {
	ipt, restore := "iptables", "iptables-restore"
	if ipv6 {
		ipt, restore = "ip6tables", "ip6tables-restore"
	}
	var b bytes.Buffer
	b.WriteString("*nat\n:" + masqChain + " - [0:0]\n")
	for _, c := range noMasq {
		if c = strings.TrimSpace(c); c != "" && strings.Contains(c, ":") == ipv6 {
			fmt.Fprintf(&b, "-A %s -d %s -m comment --comment \"kind-masq-agent: local traffic is not subject to MASQUERADE\" -j RETURN\n", masqChain, c)
		}
	}
	fmt.Fprintf(&b, "-A %s -m comment --comment \"kind-masq-agent: outbound traffic is subject to MASQUERADE (must be last in chain)\" -j MASQUERADE\nCOMMIT\n", masqChain)
	if err := run(restore, b.Bytes(), "--noflush"); err != nil {
		return err
	}
	rule := []string{"POSTROUTING", "-m", "comment", "--comment",
		"kind-masq-agent: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom KIND-MASQ-AGENT chain",
		"-m", "addrtype", "!", "--dst-type", "LOCAL", "-j", masqChain}
	if run(ipt, nil, append([]string{"-t", "nat", "-C"}, rule...)...) == nil {
		return nil
	}
	return run(ipt, nil, append([]string{"-t", "nat", "-A"}, rule...)...)
}

// waitForServiceRules waits (at most two minutes) until kube-proxy has programmed the rules for
// the kubernetes Service: before that, traffic to its ClusterIP would follow the node's default
// route off the machine.
func waitForServiceRules(ipv6 bool) {
	save := "iptables-save"
	if ipv6 {
		save = "ip6tables-save"
	}
	for i := 0; i < 120; i++ {
		out, err := exec.Command(save, "-t", "nat").Output()
		if err == nil && bytes.Contains(out, []byte("default/kubernetes:https")) {
			return
		}
		if i%15 == 0 {
			log.Printf("waiting for kube-proxy's rules for the kubernetes Service")
		}
		time.Sleep(time.Second)
	}
	log.Printf("no kube-proxy rules for the kubernetes Service after 2 minutes; going on")
}

func main() {
	log.SetFlags(log.LstdFlags)
	hostIP, podIP := os.Getenv("HOST_IP"), os.Getenv("POD_IP")
	log.Printf("tau-kindnetd: hostIP=%s podIP=%s podSubnet=%s", hostIP, podIP, os.Getenv("POD_SUBNET"))
	if hostIP != podIP {
		log.Fatalf("hostIP (%q) != podIP (%q): kindnetd must run with hostNetwork", hostIP, podIP)
	}
	client, err := newAPIClient()
	if err != nil {
		log.Fatal(err)
	}
	ipv6 := strings.Contains(hostIP, ":")
	noMasq := strings.Split(os.Getenv("POD_SUBNET"), ",")
	waitForServiceRules(ipv6)
	go func() {
		for {
			if err := syncMasquerade(ipv6, noMasq); err != nil {
				log.Printf("masquerade rules: %v (retrying)", err)
			}
			time.Sleep(60 * time.Second)
		}
	}()
	for {
		if err := reconcile(client, hostIP); err != nil {
			log.Printf("reconcile: %v (retrying)", err)
		}
		time.Sleep(10 * time.Second)
	}
}

func reconcile(client *apiClient, hostIP string) error {
	nl, err := client.nodes()
	if err != nil {
		return err
	}
	for _, n := range nl.Items {
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				ip = a.Address
				break
			}
		}
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		if ip == "" || len(cidrs) == 0 {
			log.Printf("node %s has no InternalIP or PodCIDR yet", n.Metadata.Name)
			continue
		}
		if ip == hostIP {
			changed, err := writeIfChanged(cniConfigPath, cniConfig(cidrs))
			if err != nil {
				return err
			}
			if changed {
				log.Printf("wrote %s for PodCIDRs %v", cniConfigPath, cidrs)
			}
			continue
		}
		for _, c := range cidrs {
			if strings.Contains(c, ":") != strings.Contains(ip, ":") {
				continue
			}
			if err := run("ip", nil, "route", "replace", c, "via", ip); err != nil {
				return err
			}
		}
	}
	return nil
}
