"""audiopd.render"""
