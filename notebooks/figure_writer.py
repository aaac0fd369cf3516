"""Saving figures into a folder without leaving stale ones beside them (figures.FigureWriter)."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: figures are saved as files
import matplotlib.pyplot as plt  # noqa: E402


class FigureWriter:
    """Saves figures into a folder and remembers their names in <folder>/.<owner>.written, so that the
    next writer of the same owner first removes what it wrote before (no stale figure of an earlier run
    stays beside the new ones) and nothing else."""

    def __init__(self, folder, owner):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.manifest = self.folder / f".{owner}.written"
        self.written = []
        if self.manifest.exists():
            for name in self.manifest.read_text().split("\n"):
                if name and "/" not in name and (self.folder / name).is_file():
                    (self.folder / name).unlink()
        self.manifest.write_text("")

    def save(self, fig, name, fmt="png", dpi=110):
        path = self.folder / f"{name}.{fmt}"
        fig.savefig(path, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
        plt.close(fig)
        self.written.append(path.name)
        self.manifest.write_text("".join(n + "\n" for n in self.written))
        return path
