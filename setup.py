"""pip's way in (pyproject.toml): configure, build and install the project with CMake into a staging
prefix laid out as the wheel is, the libraries and plugins in rematkit/.libs beside the module
(which finds them through its RUNPATH, $ORIGIN/.libs), then hand the rematkit/ folder to setuptools."""
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = pathlib.Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = pathlib.Path(self.build_temp).resolve() / 'cmake'
        stage = pathlib.Path(self.build_temp).resolve() / 'stage'
        shutil.rmtree(stage, ignore_errors=True)
        subprocess.check_call(['cmake', '-S', str(SOURCE), '-B', str(build), '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release',
                               '-DREMATKIT_PYTHON=ON', '-DREMATKIT_BUILD_TESTS=OFF', '-DREMATKIT_BUILD_BENCH=OFF',
                               '-DPython3_EXECUTABLE=' + sys.executable, '-DCMAKE_INSTALL_LIBDIR=rematkit/.libs',
                               '-DREMATKIT_PYTHON_INSTALL_DIR=.', '-DCMAKE_INSTALL_PREFIX=' + str(stage)])
        subprocess.check_call(['cmake', '--build', str(build)])  # the module, and the plugins it loads
        subprocess.check_call(['cmake', '--install', str(build), '--prefix', str(stage)])
        target = pathlib.Path(self.build_lib).resolve() / 'rematkit'
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(stage / 'rematkit', target, symlinks=True,
                        ignore=shutil.ignore_patterns('cmake', 'pkgconfig'))


setup(packages=[], ext_modules=[Extension('rematkit._rematkit', sources=[])], cmdclass={'build_ext': CMakeBuild},
      zip_safe=False, options={'build': {'build_base': 'build-pip'}})  # build/ is the CMake presets'
