package safety

// Random histories of moves by rename, run with the real directory script
// on real directories: template and scheme changes planned by Plan (those
// it refuses are not applied), the places it returns recorded on the
// claim and given to the hub, and spawns of users with names whose slugs
// collide across schemes, each running the layout's init container script
// (kubespawner.SharedDirectoryCommand) with its environment expanded as
// KubeSpawner expands it. After every spawn the script let through, the
// server's home must hold no file another user wrote, and every file the
// user wrote since the last keep (a keep leaves old homes unmounted) where
// the current layout puts it for this server.

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

var renameHistories = flag.Int("safety.rename-histories", 12, "random histories TestRenameHistories runs")

// renameUsers collide across schemes: "bob-" escaped is "bob-2d", user
// "bob-2d"'s safe name; "a.b" escaped is "a-2eb"; "home" and "homes" are
// directories of templates.
var renameUsers = []string{"alice", "bob-", "bob-2d", "a.b", "a-2eb", "home", "homes", "Ada"}

var renameTemplates = []string{"{username}", "home/{username}", "homes_v2/{username}", "u-{username}", "{user_server}",
	"v2_/{user_server}", "{escaped_username}", "h/{username}", "x.{username}"}

// token is a file a server wrote into its home.
type token struct {
	user, server string
	perServer    bool // the template then gave each server its own directory
	epoch        int  // keeps before it
	name         string
}

type renameWorld struct {
	t      *testing.T
	root   string
	rng    *rand.Rand
	cfg    Config
	prior  *Prior
	live   Live
	hub    []string // the places the hub's init container is told
	epoch  int
	tokens []token
	n      int
	log    []string
}

func (w *renameWorld) dir(user, server string) string {
	d, err := kubespawner.Expand(w.cfg.Shared.SubPathTemplate, user, server, w.cfg.Scheme)
	if err != nil {
		w.t.Fatalf("expand %s for %s/%s: %v", w.cfg.Shared.SubPathTemplate, user, server, err)
	}
	return d
}

// change plans a new template and scheme with on_layout_change = how, and
// applies it when the plan passes.
func (w *renameWorld) change(tmpl string, scheme kubespawner.Scheme, how OnLayoutChange) {
	now := w.cfg
	now.Shared = &SharedHome{Claim: "home-nfs", SubPathTemplate: tmpl}
	now.Scheme, now.OnLayoutChange = scheme, how
	res := Plan(now, w.prior, w.live)
	if len(res.Errors) > 0 {
		w.log = append(w.log, fmt.Sprintf("refused %s %s %s", tmpl, scheme, how))
		return
	}
	w.log = append(w.log, fmt.Sprintf("applied %s %s %s → places %q", tmpl, scheme, how, res.MovedFrom))
	w.live.Shared.Annotations = map[string]string{migration.MovedFromAnnotation: migration.EncodeMovedFrom(res.MovedFrom),
		migration.LeftAtAnnotation: migration.EncodeMovedFrom(res.LeftAt)}
	w.cfg = now
	w.prior = &Prior{Config: now, MovedFrom: res.MovedFrom}
	w.hub = res.MovedFrom
	changed := w.prior != nil && (tmpl != w.cfg.Shared.SubPathTemplate || scheme != w.cfg.Scheme)
	if how == OnLayoutChangeKeep || !changed {
		w.epoch++
	}
}

// spawn runs the init container of user's server as KubeSpawner would
// render it now, then checks the home and writes a file into it.
func (w *renameWorld) spawn(user, server string) {
	t := w.t
	named := kubespawner.NamesServer(w.cfg.Shared.SubPathTemplate)
	cmd, vars := kubespawner.SharedDirectoryCommand(kubespawner.Directory{Path: w.cfg.Shared.SubPathTemplate, MovedFrom: w.hub, Server: "{servername}",
		UID: int64(os.Getuid()), GID: int64(os.Getgid()), Mode: "0700"})
	c := exec.Command("sh", "-c", strings.ReplaceAll(cmd[2], kubespawner.SharedRoot, w.root))
	c.Env = []string{"PATH=" + os.Getenv("PATH")}
	for _, v := range vars {
		val, err := kubespawner.Expand(v.Value, user, server, w.cfg.Scheme) // KubeSpawner's _expand_all
		if err != nil {
			t.Fatalf("expand %s=%q: %v", v.Name, v.Value, err)
		}
		c.Env = append(c.Env, v.Name+"="+val)
	}
	out, err := c.CombinedOutput()
	home := w.dir(user, server)
	if err != nil {
		w.log = append(w.log, fmt.Sprintf("spawn %s/%s refused: %s", user, server, strings.TrimSpace(string(out))))
		return
	}
	w.log = append(w.log, fmt.Sprintf("spawn %s/%s → %s %s", user, server, home, strings.TrimSpace(string(out))))
	entries, err := os.ReadDir(filepath.Join(w.root, home))
	if err != nil {
		t.Fatalf("%s/%s's home %s after the script: %v\n%s", user, server, home, err, strings.Join(w.log, "\n"))
	}
	found := map[string]bool{}
	for _, e := range entries {
		found[e.Name()] = true
		var tok *token
		for i := range w.tokens {
			if w.tokens[i].name == e.Name() {
				tok = &w.tokens[i]
			}
		}
		if tok != nil && tok.user != user {
			t.Fatalf("%s/%s's home %s holds %s, written by %s/%s\n%s", user, server, home, e.Name(), tok.user, tok.server, strings.Join(w.log, "\n"))
		}
	}
	for _, tok := range w.tokens {
		if tok.user != user || tok.epoch != w.epoch {
			continue
		}
		// Where the layout puts it now: per server, the server's own
		// directory, or the default server's for what all of a user's
		// servers shared; per user, any of the user's servers.
		mine := !named || (tok.perServer && tok.server == server) || (!tok.perServer && server == "")
		if mine && !found[tok.name] {
			t.Fatalf("%s/%s's home %s lacks %s, written by %s/%s\n%s", user, server, home, tok.name, tok.user, tok.server, strings.Join(w.log, "\n"))
		}
	}
	w.n++
	name := fmt.Sprintf("t%d", w.n)
	if err := os.WriteFile(filepath.Join(w.root, home, name), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w.tokens = append(w.tokens, token{user: user, server: server, perServer: named, epoch: w.epoch, name: name})
}

func TestRenameHistories(t *testing.T) {
	applied, refused := 0, 0
	for seed := 1; seed <= *renameHistories; seed++ {
		rng := rand.New(rand.NewSource(int64(seed)))
		w := &renameWorld{t: t, root: t.TempDir(), rng: rng}
		users := slices.Clone(renameUsers)
		rng.Shuffle(len(users), func(i, j int) { users[i], users[j] = users[j], users[i] })
		w.cfg = sharedConfig(renameTemplates[rng.Intn(len(renameTemplates))], []kubespawner.Scheme{kubespawner.SchemeSafe, kubespawner.SchemeEscape}[rng.Intn(2)], users[:rng.Intn(len(users))]...)
		w.live = sharedLive(claims.RWX)
		w.prior = &Prior{Config: w.cfg}
		w.log = []string{fmt.Sprintf("seed %d: start %s %s, listed %q", seed, w.cfg.Shared.SubPathTemplate, w.cfg.Scheme, w.cfg.Users)}
		for range 40 {
			if rng.Intn(4) == 0 {
				before := len(w.log)
				how := OnLayoutChangeMove
				if rng.Intn(4) == 0 {
					how = OnLayoutChangeKeep
				}
				w.change(renameTemplates[rng.Intn(len(renameTemplates))], []kubespawner.Scheme{kubespawner.SchemeSafe, kubespawner.SchemeEscape}[rng.Intn(2)], how)
				if strings.HasPrefix(w.log[before], "refused") {
					refused++
				} else {
					applied++
				}
				continue
			}
			server := ""
			if rng.Intn(3) == 0 {
				server = "gpu"
			}
			w.spawn(renameUsers[rng.Intn(len(renameUsers))], server)
		}
	}
	t.Logf("%d histories: %d changes applied, %d refused", *renameHistories, applied, refused)
}
