"""A simulated pycuda, for tests of the grader only (on sys.path only there): see driver.py."""
