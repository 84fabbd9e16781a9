package fetcher

import (
	"archive/tar"
	"archive/zip"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// archiveKind classifies a file name by extension, as Mesos's fetcher does.
type archiveKind int

const (
	notArchive archiveKind = iota
	kindTar
	kindTarGz
	kindTarBz2
	kindTarXz
	kindZip
	kindGz // a single gzip'd file
)

func classify(name string) archiveKind {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".tar.gz"), strings.HasSuffix(n, ".tgz"):
		return kindTarGz
	case strings.HasSuffix(n, ".tar.bz2"), strings.HasSuffix(n, ".tbz2"):
		return kindTarBz2
	case strings.HasSuffix(n, ".tar.xz"), strings.HasSuffix(n, ".txz"):
		return kindTarXz
	case strings.HasSuffix(n, ".tar"):
		return kindTar
	case strings.HasSuffix(n, ".zip"):
		return kindZip
	case strings.HasSuffix(n, ".gz"):
		return kindGz
	}
	return notArchive
}

// extract unpacks the fetched file at name (relative to root) into root if
// it is a recognised archive; other files are left as they are. The archive
// itself is kept. limit bounds the bytes written.
func extract(ctx context.Context, root *os.Root, name string, limit int64) error {
	kind := classify(name)
	if kind == notArchive {
		return nil
	}
	f, err := root.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	x := &extractor{ctx: ctx, root: root, budget: limit, limit: limit}
	switch kind {
	case kindTar:
		return x.tar(f)
	case kindTarGz:
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("extracting %q: %w", name, err)
		}
		return x.tar(zr)
	case kindTarBz2:
		return x.tar(bzip2.NewReader(f))
	case kindTarXz:
		return fmt.Errorf("cannot extract %q: xz archives are not supported (set 'extract' to false to fetch it as is)", name)
	case kindZip:
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		zr, err := zip.NewReader(f, fi.Size())
		if err != nil {
			return fmt.Errorf("extracting %q: %w", name, err)
		}
		return x.zip(zr)
	case kindGz:
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("extracting %q: %w", name, err)
		}
		out := name[:len(name)-len(".gz")]
		if path.Base(out) == "" || strings.HasSuffix(out, "/") {
			return fmt.Errorf("extracting %q: no file name left after removing .gz", name)
		}
		return x.file(out, zr, 0o644)
	}
	return nil
}

// extractor writes archive entries into root, refusing any that would land
// outside it. os.Root is the enforcement; the lexical checks before it exist
// to give a clear error naming the entry.
type extractor struct {
	ctx    context.Context
	root   *os.Root
	budget int64 // bytes still allowed
	limit  int64
}

// entryName validates an archive entry name and returns it cleaned.
func entryName(raw string) (string, error) {
	if raw == "" {
		return ".", nil
	}
	if strings.HasPrefix(raw, "/") || strings.Contains(raw, "\\") || strings.ContainsRune(raw, 0) {
		return "", fmt.Errorf("archive entry %q: absolute or malformed name refused", raw)
	}
	clean := path.Clean(raw) // "./a/" -> "a", ".//" -> "."
	if clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(clean, "/") {
		return "", fmt.Errorf("archive entry %q escapes the sandbox", raw)
	}
	return clean, nil
}

// linkTarget checks that a symlink at name pointing to target stays inside
// the sandbox when resolved lexically.
func linkTarget(raw, name, target string) error {
	if target == "" || strings.HasPrefix(target, "/") {
		return fmt.Errorf("archive entry %q: symlink to %q escapes the sandbox", raw, target)
	}
	full := path.Clean(path.Join(path.Dir(name), target))
	if full == ".." || strings.HasPrefix(full, "../") {
		return fmt.Errorf("archive entry %q: symlink to %q escapes the sandbox", raw, target)
	}
	return nil
}

func (x *extractor) tar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading tar archive: %w", err)
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := x.dir(h.Name, name, mode); err != nil {
				return err
			}
		case tar.TypeReg, tar.TypeRegA:
			if err := x.file(name, tr, mode); err != nil {
				return fmt.Errorf("archive entry %q: %w", h.Name, err)
			}
		case tar.TypeSymlink:
			if err := x.symlink(h.Name, name, h.Linkname); err != nil {
				return err
			}
		case tar.TypeLink:
			target, err := entryName(h.Linkname)
			if err != nil || target == "." {
				return fmt.Errorf("archive entry %q: hard link to %q escapes the sandbox", h.Name, h.Linkname)
			}
			if err := x.parent(h.Name, name); err != nil {
				return err
			}
			_ = x.root.Remove(name)
			if err := x.root.Link(target, name); err != nil {
				return fmt.Errorf("archive entry %q: hard link to %q: %w", h.Name, h.Linkname, err)
			}
		default:
			// Devices, fifos and PAX metadata: nothing to write into a sandbox.
		}
	}
}

func (x *extractor) zip(zr *zip.Reader) error {
	for _, zf := range zr.File {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		name, err := entryName(zf.Name)
		if err != nil {
			return err
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			if err := x.dir(zf.Name, name, mode.Perm()); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			rc, err := zf.Open()
			if err != nil {
				return fmt.Errorf("archive entry %q: %w", zf.Name, err)
			}
			target, err := io.ReadAll(io.LimitReader(rc, 4096))
			rc.Close()
			if err != nil {
				return fmt.Errorf("archive entry %q: %w", zf.Name, err)
			}
			if err := x.symlink(zf.Name, name, string(target)); err != nil {
				return err
			}
		case mode.IsRegular():
			rc, err := zf.Open()
			if err != nil {
				return fmt.Errorf("archive entry %q: %w", zf.Name, err)
			}
			perm := mode.Perm()
			if perm == 0 {
				perm = 0o644 // zips made on some systems carry no Unix mode
			}
			err = x.file(name, rc, perm)
			rc.Close()
			if err != nil {
				return fmt.Errorf("archive entry %q: %w", zf.Name, err)
			}
		}
	}
	return nil
}

func (x *extractor) dir(raw, name string, mode fs.FileMode) error {
	if name == "." {
		return nil
	}
	if err := x.root.MkdirAll(name, mode|0o700); err != nil {
		return fmt.Errorf("archive entry %q: %w", raw, err)
	}
	return nil
}

// parent creates the folder holding name.
func (x *extractor) parent(raw, name string) error {
	if d := path.Dir(name); d != "." {
		if err := x.root.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("archive entry %q: %w", raw, err)
		}
	}
	return nil
}

func (x *extractor) symlink(raw, name, target string) error {
	if name == "." {
		return fmt.Errorf("archive entry %q: symlink replacing the sandbox refused", raw)
	}
	if err := linkTarget(raw, name, target); err != nil {
		return err
	}
	if err := x.parent(raw, name); err != nil {
		return err
	}
	_ = x.root.Remove(name)
	if err := x.root.Symlink(target, name); err != nil {
		return fmt.Errorf("archive entry %q: %w", raw, err)
	}
	return nil
}

// file writes one regular file, charging its size to the budget. An
// existing file (or symlink) at name is replaced, not written through.
func (x *extractor) file(name string, r io.Reader, mode fs.FileMode) error {
	if name == "." {
		return errors.New("regular file replacing the sandbox refused")
	}
	if err := x.parent(name, name); err != nil {
		return err
	}
	if fi, err := x.root.Lstat(name); err == nil && !fi.IsDir() {
		_ = x.root.Remove(name)
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, x.budget+1))
	x.budget -= n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && x.budget < 0 {
		err = fmt.Errorf("extracted data exceeds the size limit of %d bytes", x.limit)
	}
	if err == nil {
		// OpenFile's mode is filtered by the umask; archives carry the mode
		// they want (an executable script must stay executable).
		err = x.root.Chmod(name, mode)
	}
	return err
}
