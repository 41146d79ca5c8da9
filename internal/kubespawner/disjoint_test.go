package kubespawner

import (
	"strings"
	"testing"
)

// Templates whose directories can meet, or nest, for some names fail;
// templates set apart by a character no name has, or by a literal
// directory, pass. Each verdict that templates meet is backed by names
// that show it.
func TestSeparateTemplates(t *testing.T) {
	for _, c := range []struct {
		a, b string
		ok   bool
	}{
		{"{escaped_username}", "{safe_username}", false},           // "bob-2d": bob- escaped, bob-2d safe
		{"{escaped_username}", "v2_/{safe_username}", true},        // "_" is in no name
		{"home/{escaped_username}", "homes/{safe_username}", true}, // another literal directory
		{"{safe_username}", "{safe_username}/home", false},         // one inside the other
		{"home/{escaped_username}", "{safe_username}", false},      // user "home" holds the old homes
		{"home/{escaped_username}", "u-{safe_username}", true},     // "u-" then a name is never "home"
		{"h{escaped_username}", "{safe_username}", false},          // user "hx" vs user "x"
		{"homes.old/{escaped_username}", "homes/{safe_username}", true},
		{"{escaped_user_server}", "{safe_username}", false},
		{"x/{safe_username}/y", "x/{escaped_username}", false},
		{"a_{safe_username}", "b_{safe_username}", true},
	} {
		err := SeparateTemplates(c.a, c.b)
		if (err == nil) != c.ok {
			t.Errorf("%s vs %s: %v, want ok=%v", c.a, c.b, err, c.ok)
		}
		if err2 := SeparateTemplates(c.b, c.a); (err2 == nil) != (err == nil) {
			t.Errorf("%s vs %s: not symmetric: %v / %v", c.a, c.b, err, err2)
		}
	}
	// Witnesses: where the check says they meet, real names do.
	meetBy := func(a, ua, b, ub string) {
		da, _ := Expand(a, ua, "", SchemeSafe)
		db, _ := Expand(b, ub, "", SchemeSafe)
		if da != db && !strings.HasPrefix(db, da+"/") && !strings.HasPrefix(da, db+"/") {
			t.Errorf("%s(%s) = %q and %s(%s) = %q neither meet nor nest", a, ua, da, b, ub, db)
		}
	}
	meetBy("{escaped_username}", "bob-", "{safe_username}", "bob-2d")
	meetBy("home/{escaped_username}", "alice", "{safe_username}", "home")
	meetBy("h{escaped_username}", "x", "{safe_username}", "hx")
}

func TestNamesServer(t *testing.T) {
	for tmpl, want := range map[string]bool{"{username}": false, "{user_server}": true, "h/{username}/{servername}": true,
		"{escaped_user_server}": true, "{safe_servername}x": true, "{escaped_username}": false} {
		if got := NamesServer(tmpl); got != want {
			t.Errorf("%s: %v", tmpl, got)
		}
	}
}

// KubeSpawner strips trailing "-" of an expansion, and some file systems
// do not tell case apart: the patterns hold those directories too.
func TestSeparateTemplates_stripAndCase(t *testing.T) {
	for _, c := range [][2]string{
		{"s/{escaped_username}/x-{escaped_servername}", "s{safe_servername}/{safe_username}/x"}, // "s/bob-2d/x" both
		{"{escaped_username}--{escaped_servername}", "home/{safe_user_server}"},                 // user "home" holds them
		{"Home/{escaped_username}", "home/{safe_username}"},
	} {
		if err := SeparateTemplates(c[0], c[1]); err == nil {
			t.Errorf("%s vs %s: separate", c[0], c[1])
		}
	}
	d1, _ := Expand("s/{escaped_username}/x-{escaped_servername}", "bob-", "", SchemeSafe)
	d2, _ := Expand("s{safe_servername}/{safe_username}/x", "bob-2d", "", SchemeSafe)
	if d1 != d2 {
		t.Errorf("the witness: %q and %q", d1, d2)
	}
}

func TestCheckSubPathTemplate_fieldsApart(t *testing.T) {
	for _, bad := range []string{"{servername}{username}", "{servername}-{username}", "h/{username}x{servername}"} {
		if err := CheckSubPathTemplate(bad); err == nil || !strings.Contains(err.Error(), "two fields") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	for _, ok := range []string{"{user_server}", "home/{username}", "{username}.{servername}x", "u-{username}"} {
		if err := fieldsApart(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
