package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "licenses:", err)
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("licenses", flag.ContinueOnError)
	fs.SetOutput(stderr)
	checkFile := fs.String("check", "", "fail unless this report file is what this run writes")
	writeFile := fs.String("write", "", "write the report to this file")
	list := fs.Bool("list", false, "print each module of the SBOMs as path@version, one a line, sorted, and check nothing")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() == 0 {
		return usageError{errors.New("no SBOM given: name the binaries' SBOMs (go run ./internal/licenses [-check FILE] [-write FILE] BOM.json ...)")}
	}
	var boms []*bom
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("opening the SBOM: %w", err)
		}
		b, err := readBOM(f, name)
		f.Close()
		if err != nil {
			return err
		}
		boms = append(boms, b)
	}
	mods := merge(boms)
	if *list {
		for _, m := range mods {
			fmt.Fprintf(stdout, "%s@%s\n", m.Path, m.Version)
		}
		return nil
	}
	if err := check(mods); err != nil {
		return err
	}
	text := report(mods)
	if *checkFile != "" {
		had, err := os.ReadFile(*checkFile)
		if err != nil {
			return fmt.Errorf("reading the report: %w", err)
		}
		if string(had) != text {
			return fmt.Errorf("%q is not current with the binaries' modules: run make licenses-update and review the diff", *checkFile)
		}
	}
	if *writeFile != "" {
		if err := os.WriteFile(*writeFile, []byte(text), 0o644); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	fmt.Fprintf(stdout, "licenses: %d modules, every licence allowed\n", len(mods))
	return nil
}
