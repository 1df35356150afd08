// Edit > Preferences...: edits a copy of the Preferences and hands it back (chosen()); the window
// saves and applies it. A remote setting the environment already sets is said so under its field:
// the environment wins, as it does for `ckpt`.
#pragma once

#include "preferences.h"

#include <QDialog>
#include <map>

class QComboBox;
class QLabel;
class QLineEdit;

namespace ckpt::app {

class PreferencesDialog : public QDialog
{
    Q_OBJECT
public:
    explicit PreferencesDialog(const Preferences& current, QWidget* parent = nullptr);

    Preferences chosen() const;
    QComboBox* palette() const { return m_palette; }
    QComboBox* language() const { return m_language; }
    QComboBox* device() const { return m_device; }
    QLineEdit* outputFolder() const { return m_output; }
    QLineEdit* remoteField(const std::string& variable) const { return m_remote.at(variable); }
    // What the dialog says under a remote field ("" when the environment does not set it).
    QString remoteNote(const std::string& variable) const;

private:
    QWidget* pathRow(QLineEdit* field, bool file);

    QComboBox* m_palette;
    QComboBox* m_language;
    QComboBox* m_device;
    QLineEdit* m_output;
    std::map<std::string, QLineEdit*> m_remote;
    std::map<std::string, QLabel*> m_notes;
};

} // namespace ckpt::app
