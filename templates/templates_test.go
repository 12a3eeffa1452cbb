package templates

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// goFile is a Go file of the repository named in a comment: "report/flame.go".
var goFile = regexp.MustCompile(`\b[a-z]+/[a-z_]+\.go\b`)

// TestScriptsNameTheirGoFiles: every part of the page's script is joined into it, and each opens with
// a comment naming a Go file that exists and feeds it, so a reader finds the part of a view by its
// Go file and back.
func TestScriptsNameTheirGoFiles(t *testing.T) {
	files, err := fs.Glob(FS, "js/*.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if name != "js/scale.js" && !slices.Contains(pageScripts, name) {
			t.Errorf("%s is not joined into the page's script: add it to pageScripts", name)
		}
		b, err := FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var opening []string
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "//") {
				break
			}
			opening = append(opening, line)
		}
		named := goFile.FindAllString(strings.Join(opening, " "), -1)
		if len(named) == 0 {
			t.Errorf("%s does not open with a comment naming the Go file that feeds it", name)
		}
		for _, g := range named {
			if _, err := os.Stat(filepath.Join("..", g)); err != nil {
				t.Errorf("%s names %s, which does not exist", name, g)
			}
		}
	}
}

// TestPageScriptJoinsEveryPart: the page's script holds every part once, in the order of
// pageScripts, inside one function.
func TestPageScriptJoinsEveryPart(t *testing.T) {
	script, err := PageScript()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(script, "\"use strict\";\n(function () {\n") || !strings.HasSuffix(script, "})();\n") {
		t.Errorf("the script is not one function: it starts %q", script[:min(len(script), 40)])
	}
	at := 0
	for _, name := range pageScripts {
		b, err := FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(script[at:], string(b))
		if i < 0 {
			t.Fatalf("%s is not in the script after the parts before it", name)
		}
		at += i + len(b)
	}
}
