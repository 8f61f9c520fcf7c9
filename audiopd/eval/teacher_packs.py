"""Where the offline teachers' files live, how the Kokoro voice pack is built, and how both are checked.

Kokoro's English style vectors ship in the npm package ``kokoro-js@1.2.1`` (``package/voices/<name>.bin``,
float32, 510 rows x 256, one row per phoneme count). ``recipes/teachers/install.sh`` packs them once into
``<teachers dir>/kokoro-voices-en.npz`` with arrays shaped [510, 1, 256], the layout ``kokoro-onnx`` indexes.
Nothing here touches the network: a missing file is an error that names the step to run.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from audiopd.errors import ArtifactError

TEACHERS_ENV = "AUDIOPD_TEACHERS"
PACK_NAME = "kokoro-voices-en.npz"
INSTALL_STEP = "recipes/teachers/install.sh"

# The 28 English voices of Kokoro v1.0 (a = American, b = British; f/m = female/male).
KOKORO_VOICES: tuple[str, ...] = (
    "af_alloy", "af_aoede", "af_bella", "af_heart", "af_jessica", "af_kore", "af_nicole", "af_nova",
    "af_river", "af_sarah", "af_sky",
    "am_adam", "am_echo", "am_eric", "am_fenrir", "am_liam", "am_michael", "am_onyx", "am_puck", "am_santa",
    "bf_alice", "bf_emma", "bf_isabella", "bf_lily",
    "bm_daniel", "bm_fable", "bm_george", "bm_lewis",
)
STYLE_SHAPE: tuple[int, int, int] = (510, 1, 256)

# sha256 over the 28 voices' float32 bytes in KOKORO_VOICES order, as built from kokoro-js@1.2.1.
# The .npz container itself is not byte-reproducible (zip timestamps), its arrays are.
PACK_SHA256 = "4aa5d56870d5ec500f6dc2009740025047c93e362848372da52238ae2a68df56"


def teachers_dir(explicit: str | Path | None = None) -> Path:
    """The teachers' data folder: an explicit path, else $AUDIOPD_TEACHERS, else the user's cache."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(TEACHERS_ENV)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "audiopd" / "teachers"


def pack_path(explicit: str | Path | None = None) -> Path:
    return teachers_dir(explicit) / PACK_NAME


def voices_digest(voices: dict[str, np.ndarray], names: tuple[str, ...] = KOKORO_VOICES) -> str:
    """sha256 of the listed voices' float32 bytes, in order (what PACK_SHA256 pins)."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(np.ascontiguousarray(voices[name], dtype=np.float32).tobytes())
    return digest.hexdigest()


def build_kokoro_pack(voices_src: str | Path, out: str | Path, *, check_digest: bool = True) -> Path:
    """Pack ``<voices_src>/<name>.bin`` of the 28 English voices into one .npz (temp file + rename)."""
    src = Path(voices_src)
    voices: dict[str, np.ndarray] = {}
    want = int(np.prod(STYLE_SHAPE))
    for name in KOKORO_VOICES:
        path = src / f"{name}.bin"
        if not path.is_file():
            raise ArtifactError(f"Kokoro voice file {path} is missing (is {src} kokoro-js's package/voices?)")
        raw = np.fromfile(path, dtype="<f4")
        if raw.size != want:
            raise ArtifactError(f"Kokoro voice file {path} holds {raw.size} floats, expected {want}")
        voices[name] = raw.reshape(STYLE_SHAPE).astype(np.float32)
    digest = voices_digest(voices)
    if check_digest and digest != PACK_SHA256:
        raise ArtifactError(f"Kokoro voices from {src} do not match kokoro-js@1.2.1 (sha256 {digest[:12]}...)")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp.npz")
    np.savez(tmp, **voices)
    os.replace(tmp, out)
    return out


def load_kokoro_voices(path: str | Path, *, verify: bool = True) -> dict[str, np.ndarray]:
    """Read a pack built by ``build_kokoro_pack``; a missing or altered pack names the install step."""
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"Kokoro voice pack {path} is missing: run {INSTALL_STEP} "
                            f"(or set ${TEACHERS_ENV} to the folder that holds {PACK_NAME})")
    try:
        with np.load(path) as npz:
            voices = {name: npz[name] for name in npz.files}
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"Kokoro voice pack {path} is unreadable ({exc}): rerun {INSTALL_STEP}") from None
    missing = [name for name in KOKORO_VOICES if name not in voices]
    if missing:
        raise ArtifactError(f"Kokoro voice pack {path} lacks {', '.join(missing[:3])}: rerun {INSTALL_STEP}")
    if verify and voices_digest(voices) != PACK_SHA256:
        raise ArtifactError(f"Kokoro voice pack {path} fails its checksum: rerun {INSTALL_STEP}")
    return voices


def file_sha256(path: str | Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()
