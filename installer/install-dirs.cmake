# Included by the top-level CMakeLists.txt before any install() rule: the GNU layout under the
# install prefix (bin, share, share/man, ...) and 0755 for every directory an install creates, as
# Debian expects, whatever the umask of the machine that builds the package.
include(GNUInstallDirs)
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
