os.execute("touch /tmp/loom-lua-should-not-exist")
