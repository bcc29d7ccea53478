; DragonFarm installer for Windows (Inno Setup 6).
;   iscc /DAppVersion=0.1.0 packaging\windows\dragonfarm.iss
; Installs the PyInstaller one-folder app (build\dist\DragonFarm) for the
; current user, without admin rights, with Start-menu and desktop shortcuts.
; The training environment (PyTorch and friends) is not in here: the app sets
; it up on first use in %LOCALAPPDATA%\DragonFarm\env.
; Uninstalling removes the app and that environment, and keeps the person's
; runs and settings unless they say to delete them.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#ifndef DistDir
  #define DistDir "..\..\build\dist\DragonFarm"
#endif
#define AppName "DragonFarm"
#define AppExe "DragonFarm.exe"

[Setup]
AppId={{6F3C2D2A-9A47-4C1E-B8B1-2B5E0C7D4F19}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=DragonFarm contributors
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
; Per-user install: no administrator rights, {autopf} becomes %LOCALAPPDATA%\Programs.
PrivilegesRequired=lowest
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\build\installer
OutputBaseFilename=DragonFarm-{#AppVersion}-windows-x64-setup
SetupIconFile=..\..\trainer\resources\icons\dragonfarm.ico
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName={#AppName}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
CloseApplications=yes
MinVersion=10.0

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "Create a &desktop shortcut"; GroupDescription: "Shortcuts:"

[Files]
Source: "{#DistDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"; Comment: "Teach a small language model your examples"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#AppExe}"; Description: "Start {#AppName} now"; Flags: nowait postinstall skipifsilent

[Code]
function DataDir(): String;
begin
  { trainer.run.settings / trainer.run.launch: platformdirs' per-user folder on Windows }
  Result := ExpandConstant('{localappdata}\DragonFarm');
end;

procedure DeleteTrainingEnvironment();
var
  Base: String;
begin
  Base := DataDir();
  DelTree(Base + '\env', True, True, True);
  DelTree(Base + '\env-staging', True, True, True);
  DelTree(Base + '\env-old', True, True, True);
  DelTree(Base + '\python', True, True, True);
  DelTree(Base + '\uv-cache', True, True, True);
  DeleteFile(Base + '\setup.log');
end;

procedure DeleteRunsAndSettings();
var
  Base: String;
begin
  Base := DataDir();
  DelTree(Base + '\runs', True, True, True);
  DelTree(Base + '\logs', True, True, True);
  DeleteFile(Base + '\settings.json');
  RemoveDir(Base);
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if CurUninstallStep = usPostUninstall then
  begin
    { The training tools belong to the app: always removed (several GB). }
    DeleteTrainingEnvironment();
    { The person's runs and trained models stay unless they ask. }
    if (not UninstallSilent()) and
       (MsgBox('Also delete your DragonFarm runs, trained models and settings in ' + DataDir() + '?' + #13#10#13#10 +
               'Choose No to keep them (for example to reinstall later). Runs you saved in another folder are never deleted.',
               mbConfirmation, MB_YESNO or MB_DEFBUTTON2) = IDYES) then
      DeleteRunsAndSettings();
    RemoveDir(DataDir());
  end;
end;
