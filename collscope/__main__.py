from collscope.cli import run

run()
