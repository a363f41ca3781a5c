"""The build backend of covmirror-client (PEP 517 and PEP 660), standard library only.

pyproject.toml names it with backend-path ["."], and requires nothing: pip
builds and installs the client offline, with or without build isolation
(`python3 -m pip install --no-index .`), where setuptools may be missing or
too old to build a wheel without the `wheel` package. The wheel holds the
one module, covmirror_client.py, and its metadata from pyproject.toml's
[project] table.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_MODULE = "covmirror_client.py"
_SDIST_FILES = ("pyproject.toml", "covmirror_build.py", _MODULE, "README.md", "tests/test_client.py")


def _project():
    """pyproject.toml's [project] name, version, description and requires-python."""
    with open(os.path.join(_HERE, "pyproject.toml"), "rb") as f:
        raw = f.read()
    try:
        import tomllib  # Python 3.11 and later
        return tomllib.loads(raw.decode("utf-8"))["project"]
    except ImportError:
        pass
    # Older Pythons: the [project] table's one-line string values, all
    # this file's [project] holds besides empty lists.
    text = raw.decode("utf-8")
    table = re.search(r"^\[project\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S).group(1)
    return dict(re.findall(r'^([a-z-]+)\s*=\s*"([^"]*)"', table, re.M))


def _dist():
    p = _project()
    return re.sub(r"[-_.]+", "_", p["name"]), p["version"], p


def _metadata():
    _, _, p = _dist()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
             "Summary: " + p.get("description", ""), "Requires-Python: " + p.get("requires-python", ">=3.8")]
    return ("\n".join(lines) + "\n").encode()


_WHEEL = b"Wheel-Version: 1.0\nGenerator: covmirror_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _write_wheel(directory, files):
    """Writes a wheel of files ({archive name: bytes}) plus its dist-info."""
    name, version, _ = _dist()
    info = "%s-%s.dist-info" % (name, version)
    files = dict(files)
    files[info + "/METADATA"] = _metadata()
    files[info + "/WHEEL"] = _WHEEL
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(info + "/RECORD,,")
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = "%s-%s-py3-none-any.whl" % (name, version)
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return wheel


def _read(name):
    with open(os.path.join(_HERE, name), "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, {_MODULE: _read(_MODULE)})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file puts this directory on sys.path: edits take effect at once.
    return _write_wheel(wheel_directory, {"covmirror_client.pth": (_HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    name, version, _ = _dist()
    base = "%s-%s" % (name, version)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        members = [(f, _read(f)) for f in _SDIST_FILES if os.path.exists(os.path.join(_HERE, f))]
        members.append(("PKG-INFO", _metadata()))
        for f, data in members:
            ti = tarfile.TarInfo(base + "/" + f)
            ti.size, ti.mode = len(data), 0o644
            tar.addfile(ti, io.BytesIO(data))
    return base + ".tar.gz"
