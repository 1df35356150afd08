# bash completion for ckpt, installed as /usr/share/bash-completion/completions/ckpt.
# Subcommands and options are read from ckpt's own --help, so they follow the program; only the
# values of a few options are listed here.
_ckpt()
{
    local cur prev words cword
    _init_completion || return

    local i sub= subi=0
    for ((i = 1; i < cword; i++)); do
        if [[ ${words[i]} != -* ]]; then
            sub=${words[i]} subi=$i
            break
        fi
    done

    if [[ -z $sub ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$("$1" --help 2>/dev/null |
                sed -n '/^[Ss][Uu][Bb][Cc][Oo][Mm][Mm][Aa][Nn][Dd][Ss]:/,$s/^  \([a-z][a-z-]*\)  .*/\1/p')" -- "$cur"))
        fi
        return
    fi

    case $prev in
        --format) COMPREPLY=($(compgen -W 'safetensors bin' -- "$cur")); return ;;
        --dtype) COMPREPLY=($(compgen -W 'fp32 bf16 fp16' -- "$cur")); return ;;
        --device) COMPREPLY=($(compgen -W 'auto cpu cuda' -- "$cur")); return ;;
        --max-shard-size) COMPREPLY=($(compgen -W '500MB 1GB 2GB 5GB 10GB' -- "$cur")); return ;;
        --histogram) return ;;
        --tag)
            # the tags are the sub-folders of the checkpoint folder named on the line
            local w
            for w in "${words[@]:subi+1}"; do
                if [[ $w != -* && -d $w ]]; then
                    COMPREPLY=($(cd -- "$w" 2>/dev/null && compgen -d -- "$cur"))
                    return
                fi
            done
            return ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$("$1" "$sub" --help 2>/dev/null |
            sed -n 's/^  \(-[A-Za-z],\)\{0,1\}\(--[a-z0-9-]*\).*/\2/p')" -- "$cur"))
        return
    fi
    _filedir
}
complete -F _ckpt ckpt
