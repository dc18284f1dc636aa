import os

from setuptools import find_packages, setup

here = os.path.abspath(os.path.dirname(__file__))
version = {}
with open(os.path.join(here, "sksparse_struct", "_version.py")) as f:
    exec(f.read(), version)
with open(os.path.join(here, "README.rst"), encoding="utf-8") as f:
    long_description = f.read()

setup(
    name="sksparse_struct",
    version=version["__version__"],
    description="Sparse and structured prediction for NLP with a scikit-learn API",
    long_description=long_description,
    long_description_content_type="text/x-rst",
    license="BSD-3-Clause",
    license_files=["LICENSE"],
    packages=find_packages(include=["sksparse_struct", "sksparse_struct.*"]),
    package_data={"sksparse_struct.datasets": ["data/*"]},
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=[
        "numpy",
        "scipy",
        "scikit-learn>=1.6",
        "numba",
        "llvmlite",  # numba's own dependency, imported directly for a prefetch intrinsic
        "joblib",
    ],
    extras_require={
        # PyLBFGS: the liblbfgs binding that the L-BFGS tests compare with;
        # dask: predict_file on a dask cluster (a LocalCluster in the tests).
        "test": ["pytest", "pytest-xdist", "hypothesis", "PyLBFGS", "dask[distributed]"],
        "benchmark": ["entmax", "torch", "sklearn-crfsuite", "networkx"],
        "doc": ["sphinx", "numpydoc", "matplotlib"],
        "examples": ["matplotlib"],
        "dask": ["dask[distributed]"],
    },
    entry_points={"console_scripts": ["sksparse-struct = sksparse_struct._cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Intended Audience :: Science/Research",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
